# gnuplot script written by fusegen report from bench/results/2026-12-01-nvidia-h200-mla-decode-bda115b.json
set terminal png size 1100,900
set output '2026-12-01-nvidia-h200-mla-decode-bda115b-readme.png'
set title "NVIDIA H200, 2026-12-01T05:07:04Z (commit bda115b)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 1022.9
4096 1731.6
16384 2210.4
EOD
$s1 << EOD
1024 44.6
4096 37.4
16384 36.3
EOD
$s2 << EOD
1024 81.6
4096 246.9
16384 718.0
EOD
$s3 << EOD
1024 8.7
4096 22.1
16384 33.6
EOD
$s4 << EOD
1024 2283.1
4096 2448.8
16384 2160.0
EOD
$s5 << EOD
1024 46.8
4096 41.2
16384 39.4
EOD
$s6 << EOD
1024 1221.2
4096 2477.7
16384 3546.8
EOD
$s7 << EOD
1024 110.3
4096 209.5
16384 224.5
EOD
$s8 << EOD
1024 107.5
4096 377.5
16384 1017.5
EOD
$s9 << EOD
1024 7.5
4096 27.7
16384 96.8
EOD
$s10 << EOD
1024 2744.4
4096 3680.0
16384 4042.6
EOD
$s11 << EOD
1024 215.3
4096 242.6
16384 249.8
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
     4595.4 with lines lw 3 lc rgb 'black' title 'read ceiling (4595 GB/s)', \
     4241.2 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4241 GB/s)'
