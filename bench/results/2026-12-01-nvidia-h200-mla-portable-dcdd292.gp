# gnuplot script written by fusegen report from bench/results/2026-12-01-nvidia-h200-mla-portable-dcdd292.json
set terminal png size 1100,900
set output '2026-12-01-nvidia-h200-mla-portable-dcdd292.png'
set title "NVIDIA H200, 2026-12-01T08:46:13Z (commit dcdd292)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 44.0
16384 36.7
EOD
$s1 << EOD
EOD
$s2 << EOD
1024 17.4
16384 18.7
EOD
$s3 << EOD
EOD
$s4 << EOD
1024 45.7
16384 37.6
EOD
$s5 << EOD
EOD
$s6 << EOD
1024 134.6
16384 161.4
EOD
$s7 << EOD
EOD
$s8 << EOD
1024 26.5
16384 53.9
EOD
$s9 << EOD
EOD
$s10 << EOD
1024 209.3
16384 214.7
EOD
$s11 << EOD
EOD
$s12 << EOD
1024 102.3
4096 171.2
EOD
$s13 << EOD
EOD
$s14 << EOD
1024 24.7
4096 24.5
EOD
$s15 << EOD
EOD
$s16 << EOD
1024 59.1
4096 107.4
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
     4513.5 with lines lw 3 lc rgb 'black' title 'read ceiling (4513 GB/s)', \
     4245.1 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4245 GB/s)'
