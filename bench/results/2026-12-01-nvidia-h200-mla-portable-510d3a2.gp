# gnuplot script written by fusegen report from bench/results/2026-12-01-nvidia-h200-mla-portable-510d3a2.json
set terminal png size 1100,900
set output '2026-12-01-nvidia-h200-mla-portable-510d3a2.png'
set title "NVIDIA H200, 2026-12-01T09:31:14Z (commit 510d3a2)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 96.7
16384 91.9
EOD
$s1 << EOD
EOD
$s2 << EOD
1024 25.7
16384 55.0
EOD
$s3 << EOD
EOD
$s4 << EOD
1024 110.2
16384 91.7
EOD
$s5 << EOD
EOD
$s6 << EOD
1024 325.5
16384 387.9
EOD
$s7 << EOD
EOD
$s8 << EOD
1024 17.7
16384 116.0
EOD
$s9 << EOD
EOD
$s10 << EOD
1024 463.3
16384 534.9
EOD
$s11 << EOD
EOD
$s12 << EOD
1024 64.1
4096 199.8
EOD
$s13 << EOD
EOD
$s14 << EOD
1024 51.2
4096 57.9
EOD
$s15 << EOD
EOD
$s16 << EOD
1024 33.9
4096 104.7
EOD
$s17 << EOD
EOD
plot $s0 with linespoints lw 2 lc 1 title 'bf16_nh128_kv512_r64_s16384_p64_b16_g16_s2_portable', \
     $s2 with linespoints lw 2 lc 2 title 'bf16_nh128_kv512_r64_s16384_p64_b1_g16_s17_portable', \
     $s4 with linespoints lw 2 lc 3 title 'bf16_nh128_kv512_r64_s16384_p64_b64_g16_s1_portable', \
     $s6 with linespoints lw 2 lc 4 title 'bf16_nh16_kv512_r64_s16384_p64_b16_g16_s9_portable', \
     $s8 with linespoints lw 2 lc 5 title 'bf16_nh16_kv512_r64_s16384_p64_b1_g16_s32_portable', \
     $s10 with linespoints lw 2 lc 6 title 'bf16_nh16_kv512_r64_s16384_p64_b64_g16_s3_portable', \
     $s12 with linespoints lw 2 lc 7 title 'bf16_nh16_kv512_r64_s4096_p1_b4_g16_s32_portable', \
     $s14 with linespoints lw 2 lc 8 title 'f16_nh128_kv512_r64_s4096_b2_g16_s9_portable', \
     $s16 with linespoints lw 2 lc 9 title 'f16_nh32_kv512_r64_s4096_b2_g16_s32_portable', \
     4501.7 with lines lw 3 lc rgb 'black' title 'read ceiling (4502 GB/s)', \
     4267.4 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4267 GB/s)'
