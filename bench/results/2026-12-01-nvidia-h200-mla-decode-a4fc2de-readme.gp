# gnuplot script written by fusegen report from bench/results/2026-12-01-nvidia-h200-mla-decode-a4fc2de.json
set terminal png size 1100,900
set output '2026-12-01-nvidia-h200-mla-decode-a4fc2de-readme.png'
set title "NVIDIA H200, 2026-12-01T16:20:00Z (commit a4fc2de)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 1141.7
4096 1941.2
16384 2364.6
EOD
$s1 << EOD
1024 44.8
4096 37.8
16384 36.7
EOD
$s2 << EOD
1024 87.3
4096 265.4
16384 772.6
EOD
$s3 << EOD
1024 8.9
4096 22.2
16384 33.6
EOD
$s4 << EOD
1024 2470.0
4096 2599.3
16384 2250.3
EOD
$s5 << EOD
1024 47.1
4096 41.5
16384 39.8
EOD
$s6 << EOD
1024 1351.5
4096 2549.6
16384 3634.4
EOD
$s7 << EOD
1024 111.0
4096 213.1
16384 227.0
EOD
$s8 << EOD
1024 122.4
4096 408.8
16384 1097.5
EOD
$s9 << EOD
1024 7.5
4096 27.9
16384 97.5
EOD
$s10 << EOD
1024 2718.0
4096 3704.8
16384 4120.2
EOD
$s11 << EOD
1024 218.7
4096 245.3
16384 252.3
EOD
plot $s0 with linespoints lw 2 lc 1 title 'bf16_nh128_kv512_r64_s16384_p64_b16_g64_c2x2', \
     $s1 with lines dt 2 lc 1 title 'baseline of bf16_nh128_kv512_r64_s16384_p64_b16_g64_c2x2', \
     $s2 with linespoints lw 2 lc 2 title 'bf16_nh128_kv512_r64_s16384_p64_b1_g64_c8x7', \
     $s3 with lines dt 2 lc 2 title 'baseline of bf16_nh128_kv512_r64_s16384_p64_b1_g64_c8x7', \
     $s4 with linespoints lw 2 lc 3 title 'bf16_nh128_kv512_r64_s16384_p64_b64_g64_c1x1', \
     $s5 with lines dt 2 lc 3 title 'baseline of bf16_nh128_kv512_r64_s16384_p64_b64_g64_c1x1', \
     $s6 with linespoints lw 2 lc 4 title 'bf16_nh16_kv512_r64_s16384_p64_b16_g16_c2x4', \
     $s7 with lines dt 2 lc 4 title 'baseline of bf16_nh16_kv512_r64_s16384_p64_b16_g16_c2x4', \
     $s8 with linespoints lw 2 lc 5 title 'bf16_nh16_kv512_r64_s16384_p64_b1_g16_c8x14', \
     $s9 with lines dt 2 lc 5 title 'baseline of bf16_nh16_kv512_r64_s16384_p64_b1_g16_c8x14', \
     $s10 with linespoints lw 2 lc 6 title 'bf16_nh16_kv512_r64_s16384_p64_b64_g16_c2x1', \
     $s11 with lines dt 2 lc 6 title 'baseline of bf16_nh16_kv512_r64_s16384_p64_b64_g16_c2x1', \
     4506.5 with lines lw 3 lc rgb 'black' title 'read ceiling (4507 GB/s)', \
     4265.6 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4266 GB/s)'
