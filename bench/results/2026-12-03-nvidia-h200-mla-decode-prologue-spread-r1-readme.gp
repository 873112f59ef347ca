# gnuplot script written by fusegen report from bench/results/2026-12-03-nvidia-h200-mla-decode-prologue-spread-r1.json
set terminal png size 1100,900
set output '2026-12-03-nvidia-h200-mla-decode-prologue-spread-r1-readme.png'
set title "NVIDIA H200, 2026-12-03T19:53:06Z (commit 481e717)" noenhanced
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
4096 1921.2
16384 2313.2
EOD
$s1 << EOD
EOD
$s2 << EOD
1024 87.4
4096 265.4
16384 765.0
EOD
$s3 << EOD
EOD
$s4 << EOD
1024 2470.1
4096 2555.3
16384 2562.3
EOD
$s5 << EOD
EOD
$s6 << EOD
1024 1429.9
4096 2733.8
16384 3748.6
EOD
$s7 << EOD
EOD
$s8 << EOD
1024 122.1
4096 427.3
16384 1173.8
EOD
$s9 << EOD
EOD
$s10 << EOD
1024 2995.2
4096 3839.8
16384 4181.5
EOD
$s11 << EOD
EOD
$s12 << EOD
1024 460.9
4096 1173.9
EOD
$s13 << EOD
EOD
$s14 << EOD
1024 173.5
4096 487.6
EOD
$s15 << EOD
EOD
$s16 << EOD
1024 224.5
4096 645.3
EOD
$s17 << EOD
EOD
plot $s0 with linespoints lw 2 lc 1 title 'bf16_nh128_kv512_r64_s16384_p64_b16_g64_c2x2', \
     $s2 with linespoints lw 2 lc 2 title 'bf16_nh128_kv512_r64_s16384_p64_b1_g64_c8x7', \
     $s4 with linespoints lw 2 lc 3 title 'bf16_nh128_kv512_r64_s16384_p64_b64_g64_c1x1', \
     $s6 with linespoints lw 2 lc 4 title 'bf16_nh16_kv512_r64_s16384_p64_b16_g16_c2x4', \
     $s8 with linespoints lw 2 lc 5 title 'bf16_nh16_kv512_r64_s16384_p64_b1_g16_c8x14', \
     $s10 with linespoints lw 2 lc 6 title 'bf16_nh16_kv512_r64_s16384_p64_b64_g16_c2x1', \
     $s12 with linespoints lw 2 lc 7 title 'bf16_nh16_kv512_r64_s4096_p1_b4_g16_c4x7', \
     $s14 with linespoints lw 2 lc 8 title 'f16_nh128_kv512_r64_s4096_b2_g64_c4x7', \
     $s16 with linespoints lw 2 lc 9 title 'f16_nh32_kv512_r64_s4096_b2_g32_c8x7', \
     4506.1 with lines lw 3 lc rgb 'black' title 'read ceiling (4506 GB/s)', \
     4266.6 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4267 GB/s)'
