# gnuplot script written by fusegen report from bench/results/2026-12-01-nvidia-h200-mla-block-e15aa7c.json
set terminal png size 1100,900
set output '2026-12-01-nvidia-h200-mla-block-e15aa7c.png'
set title "NVIDIA H200, 2026-12-01T17:11:30Z (commit e15aa7c)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
4096 956.9
EOD
$s1 << EOD
4096 647.0
EOD
$s2 << EOD
4096 606.4
4096 277.3
EOD
$s3 << EOD
4096 647.1
4096 1514.0
EOD
$s4 << EOD
4096 1314.5
EOD
$s5 << EOD
4096 952.5
EOD
$s6 << EOD
4096 581.6
4096 158.2
EOD
$s7 << EOD
4096 949.8
4096 1491.5
EOD
$s8 << EOD
4096 946.8
4096 475.2
EOD
$s9 << EOD
4096 894.4
4096 1056.2
EOD
$s10 << EOD
4096 1523.0
4096 890.1
EOD
$s11 << EOD
4096 2157.8
4096 2185.3
EOD
$s12 << EOD
4096 1346.3
4096 866.2
EOD
$s13 << EOD
4096 1123.7
4096 1179.0
EOD
plot $s0 with linespoints lw 2 lc 1 title 'bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1', \
     $s1 with lines dt 2 lc 1 title 'baseline of bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b1', \
     $s2 with linespoints lw 2 lc 2 title 'bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b16', \
     $s3 with lines dt 2 lc 2 title 'baseline of bf16_h2048_nh16_q0_kv512_r64_s16384_p64_b16', \
     $s4 with linespoints lw 2 lc 3 title 'bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b1', \
     $s5 with lines dt 2 lc 3 title 'baseline of bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b1', \
     $s6 with linespoints lw 2 lc 4 title 'bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b16', \
     $s7 with lines dt 2 lc 4 title 'baseline of bf16_h7168_nh16_q1536_kv512_r64_s16384_p64_b16', \
     $s8 with linespoints lw 2 lc 5 title 'bf16_h7168_nh16_q1536_kv512_r64_s4096_p1_b4', \
     $s9 with lines dt 2 lc 5 title 'baseline of bf16_h7168_nh16_q1536_kv512_r64_s4096_p1_b4', \
     $s10 with linespoints lw 2 lc 6 title 'f16_h5120_nh128_q1536_kv512_r64_s4096_b2', \
     $s11 with lines dt 2 lc 6 title 'baseline of f16_h5120_nh128_q1536_kv512_r64_s4096_b2', \
     $s12 with linespoints lw 2 lc 7 title 'f16_h5120_nh32_q1536_kv512_r64_s4096_b2', \
     $s13 with lines dt 2 lc 7 title 'baseline of f16_h5120_nh32_q1536_kv512_r64_s4096_b2', \
     4511.7 with lines lw 3 lc rgb 'black' title 'read ceiling (4512 GB/s)', \
     4264.7 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4265 GB/s)'
