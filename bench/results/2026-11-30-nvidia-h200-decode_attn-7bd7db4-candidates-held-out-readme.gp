# gnuplot script written by fusegen report from 2026-11-30-nvidia-h200-decode_attn-7bd7db4-candidates-held-out.json
set terminal png size 1100,900
set output '2026-11-30-nvidia-h200-decode_attn-7bd7db4-candidates-held-out-readme.png'
set title "NVIDIA H200, 2026-11-30T10:44:42Z (commit 7bd7db4)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 3302.0
2048 3412.5
4096 3565.0
8192 3757.1
16384 4005.9
EOD
$s1 << EOD
1024 1837.7
2048 1944.2
4096 2039.2
8192 2284.2
16384 2686.6
EOD
$s2 << EOD
1024 3317.1
2048 3425.2
4096 3545.3
8192 3752.2
16384 4034.1
EOD
$s3 << EOD
EOD
$s4 << EOD
1024 3243.9
2048 3408.3
4096 3612.9
8192 3899.1
16384 4170.4
EOD
$s5 << EOD
1024 1805.4
2048 1930.4
4096 2132.1
8192 2539.2
16384 2989.9
EOD
$s6 << EOD
1024 3279.1
2048 3383.5
4096 3637.4
8192 3932.0
16384 4195.5
EOD
$s7 << EOD
EOD
$s8 << EOD
1024 2952.6
2048 3216.9
4096 3569.1
8192 3954.0
16384 4242.7
EOD
$s9 << EOD
1024 1770.1
2048 2072.2
4096 2513.7
8192 3027.6
16384 3526.1
EOD
$s10 << EOD
1024 2990.9
2048 3216.4
4096 3606.1
8192 3962.9
16384 4268.9
EOD
$s11 << EOD
EOD
plot $s0 with linespoints lw 2 lc 1 title 'f16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_k16n8f6_norm', \
     $s1 with lines dt 2 lc 1 title 'baseline of f16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_k16n8f6_norm', \
     $s2 with linespoints lw 2 lc 2 title 'f16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_k16n8f8_norm', \
     $s4 with linespoints lw 2 lc 3 title 'f16_h4096_nh32_hd128_s16384_b2_c2x2_t512_ring_k16n8f6_norm', \
     $s5 with lines dt 2 lc 3 title 'baseline of f16_h4096_nh32_hd128_s16384_b2_c2x2_t512_ring_k16n8f6_norm', \
     $s6 with linespoints lw 2 lc 4 title 'f16_h4096_nh32_hd128_s16384_b2_c2x2_t512_ring_k16n8f8_norm', \
     $s8 with linespoints lw 2 lc 5 title 'f16_h4096_nh32_hd128_s16384_b4_c2x2_t512_ring_k16n8f6_norm', \
     $s9 with lines dt 2 lc 5 title 'baseline of f16_h4096_nh32_hd128_s16384_b4_c2x2_t512_ring_k16n8f6_norm', \
     $s10 with linespoints lw 2 lc 6 title 'f16_h4096_nh32_hd128_s16384_b4_c2x2_t512_ring_k16n8f8_norm', \
     4590.4 with lines lw 3 lc rgb 'black' title 'read ceiling (4590 GB/s)', \
     4239.9 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4240 GB/s)'
