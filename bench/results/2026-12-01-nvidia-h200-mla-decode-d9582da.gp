# gnuplot script written by fusegen report from bench/results/2026-12-01-nvidia-h200-mla-decode-d9582da.json
set terminal png size 1100,900
set output '2026-12-01-nvidia-h200-mla-decode-d9582da.png'
set title "NVIDIA H200, 2026-12-01T09:12:04Z (commit d9582da)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 1054.3
4096 1763.7
16384 2174.5
EOD
$s1 << EOD
1024 44.8
4096 37.8
16384 36.7
EOD
$s2 << EOD
1024 83.3
4096 248.7
16384 724.6
EOD
$s3 << EOD
1024 8.8
4096 22.2
16384 33.7
EOD
$s4 << EOD
1024 2316.2
4096 2440.2
16384 2144.6
EOD
$s5 << EOD
1024 47.1
4096 41.5
16384 39.7
EOD
$s6 << EOD
1024 1261.1
4096 2499.1
16384 3593.8
EOD
$s7 << EOD
1024 110.9
4096 213.0
16384 227.0
EOD
$s8 << EOD
1024 110.9
4096 389.9
16384 1038.3
EOD
$s9 << EOD
1024 7.5
4096 27.9
16384 97.5
EOD
$s10 << EOD
1024 2742.5
4096 3686.1
16384 4027.0
EOD
$s11 << EOD
1024 218.8
4096 245.3
16384 252.2
EOD
$s12 << EOD
1024 398.4
4096 1016.4
EOD
$s13 << EOD
1024 28.2
4096 103.8
EOD
$s14 << EOD
1024 153.1
4096 435.4
EOD
$s15 << EOD
1024 22.0
4096 38.7
EOD
$s16 << EOD
1024 209.5
4096 583.7
EOD
$s17 << EOD
1024 19.6
4096 69.3
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
     $s12 with linespoints lw 2 lc 7 title 'bf16_nh16_kv512_r64_s4096_p1_b4_g16_c4x7', \
     $s13 with lines dt 2 lc 7 title 'baseline of bf16_nh16_kv512_r64_s4096_p1_b4_g16_c4x7', \
     $s14 with linespoints lw 2 lc 8 title 'f16_nh128_kv512_r64_s4096_b2_g64_c4x7', \
     $s15 with lines dt 2 lc 8 title 'baseline of f16_nh128_kv512_r64_s4096_b2_g64_c4x7', \
     $s16 with linespoints lw 2 lc 9 title 'f16_nh32_kv512_r64_s4096_b2_g32_c8x7', \
     $s17 with lines dt 2 lc 9 title 'baseline of f16_nh32_kv512_r64_s4096_b2_g32_c8x7', \
     4503.5 with lines lw 3 lc rgb 'black' title 'read ceiling (4504 GB/s)', \
     4265.6 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4266 GB/s)'
