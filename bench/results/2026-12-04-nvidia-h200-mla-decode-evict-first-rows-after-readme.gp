# gnuplot script written by fusegen report from bench/results/2026-12-04-nvidia-h200-mla-decode-evict-first-rows-after.json
set terminal png size 1100,900
set output '2026-12-04-nvidia-h200-mla-decode-evict-first-rows-after-readme.png'
set title "NVIDIA H200, 2026-12-04T15:04:52Z (commit 06a47e6)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 1164.3
4096 1973.2
16384 2419.0
EOD
$s1 << EOD
EOD
$s2 << EOD
1024 2467.9
4096 2619.7
16384 2644.1
EOD
$s3 << EOD
EOD
$s4 << EOD
1024 1641.3
4096 2957.9
16384 3784.2
EOD
$s5 << EOD
EOD
$s6 << EOD
1024 149.0
2048 282.0
4096 514.2
8192 886.3
16384 1432.5
EOD
$s7 << EOD
EOD
$s8 << EOD
1024 3122.5
4096 3917.8
16384 4175.3
EOD
$s9 << EOD
EOD
plot $s0 with linespoints lw 2 lc 1 title 'bf16_nh128_kv512_r64_s16384_p64_b16_g64_s4', \
     $s2 with linespoints lw 2 lc 2 title 'bf16_nh128_kv512_r64_s16384_p64_b64_g64_c1x1', \
     $s4 with linespoints lw 2 lc 3 title 'bf16_nh16_kv512_r64_s16384_p64_b16_g16_s8', \
     $s6 with linespoints lw 2 lc 4 title 'bf16_nh16_kv512_r64_s16384_p64_b1_g16_s132', \
     $s8 with linespoints lw 2 lc 5 title 'bf16_nh16_kv512_r64_s16384_p64_b64_g16_c2x1', \
     4514.7 with lines lw 3 lc rgb 'black' title 'read ceiling (4515 GB/s)', \
     4264.8 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4265 GB/s)'
