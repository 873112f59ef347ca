# gnuplot script written by fusegen report from bench/results/2026-12-04-nvidia-h200-mla-decode-9259a6e-shuffled-r1.json
set terminal png size 1100,900
set output '2026-12-04-nvidia-h200-mla-decode-9259a6e-shuffled-r1-readme.png'
set title "NVIDIA H200, 2026-12-04T14:27:36Z (commit 9259a6e)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 1165.1
4096 1972.8
16384 2414.3
EOD
$s1 << EOD
EOD
$s2 << EOD
1024 2460.0
4096 2577.0
16384 2594.3
EOD
$s3 << EOD
EOD
$s4 << EOD
1024 1524.1
4096 2818.3
16384 3752.1
EOD
$s5 << EOD
EOD
$s6 << EOD
1024 148.3
2048 277.8
4096 504.9
8192 872.6
16384 1354.4
EOD
$s7 << EOD
EOD
$s8 << EOD
1024 3001.6
4096 3855.2
16384 4173.7
EOD
$s9 << EOD
EOD
plot $s0 with linespoints lw 2 lc 1 title 'bf16_nh128_kv512_r64_s16384_p64_b16_g64_s4', \
     $s2 with linespoints lw 2 lc 2 title 'bf16_nh128_kv512_r64_s16384_p64_b64_g64_c1x1', \
     $s4 with linespoints lw 2 lc 3 title 'bf16_nh16_kv512_r64_s16384_p64_b16_g16_s8', \
     $s6 with linespoints lw 2 lc 4 title 'bf16_nh16_kv512_r64_s16384_p64_b1_g16_s132', \
     $s8 with linespoints lw 2 lc 5 title 'bf16_nh16_kv512_r64_s16384_p64_b64_g16_c2x1', \
     4510.8 with lines lw 3 lc rgb 'black' title 'read ceiling (4511 GB/s)', \
     4268.1 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4268 GB/s)'
