# gnuplot script written by fusegen report from bench/results/2026-11-30-nvidia-h200-decode_attn-paged.json
set terminal png size 1100,900
set output '2026-11-30-nvidia-h200-decode_attn-paged.png'
set title "NVIDIA H200, 2026-11-30T08:36:18Z (commit bad0538+paged)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 3159.0
2048 3288.1
4096 3474.6
8192 3677.6
16384 4001.9
EOD
$s1 << EOD
1024 1841.6
2048 1953.9
4096 2031.7
8192 2279.0
16384 2692.3
EOD
$s2 << EOD
1024 2731.5
2048 3055.0
4096 3427.3
8192 3842.7
16384 4168.3
EOD
$s3 << EOD
1024 1786.6
2048 2077.8
4096 2523.5
8192 3033.6
16384 3522.9
EOD
$s4 << EOD
1024 3148.5
2048 3269.0
4096 3441.6
8192 3682.7
16384 4016.2
EOD
$s5 << EOD
1024 1840.4
2048 1953.9
4096 2059.9
8192 2284.7
16384 2688.1
EOD
$s6 << EOD
1024 2813.7
2048 3105.4
4096 3503.3
8192 3879.5
16384 4206.0
EOD
$s7 << EOD
1024 1771.8
2048 2068.3
4096 2505.3
8192 3028.5
16384 3517.0
EOD
$s8 << EOD
1024 3134.1
2048 3234.3
4096 3334.8
8192 3500.4
16384 3793.0
EOD
$s9 << EOD
EOD
$s10 << EOD
1024 2758.8
2048 3080.2
4096 3481.2
8192 3783.0
16384 4165.3
EOD
$s11 << EOD
EOD
$s12 << EOD
1024 3115.9
2048 3240.3
4096 3375.7
8192 3607.4
16384 3864.8
EOD
$s13 << EOD
EOD
$s14 << EOD
1024 2791.1
2048 3088.8
4096 3475.6
8192 3829.5
16384 4081.6
EOD
$s15 << EOD
EOD
plot $s0 with linespoints lw 2 lc 1 title 'bf16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_norm', \
     $s1 with lines dt 2 lc 1 title 'baseline of bf16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_norm', \
     $s2 with linespoints lw 2 lc 2 title 'bf16_h4096_nh32_hd128_s16384_b4_c2x2_t512_ring_norm', \
     $s3 with lines dt 2 lc 2 title 'baseline of bf16_h4096_nh32_hd128_s16384_b4_c2x2_t512_ring_norm', \
     $s4 with linespoints lw 2 lc 3 title 'f16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_norm', \
     $s5 with lines dt 2 lc 3 title 'baseline of f16_h4096_nh32_hd128_s16384_b1_c2x2_t512_ring_norm', \
     $s6 with linespoints lw 2 lc 4 title 'f16_h4096_nh32_hd128_s16384_b4_c2x2_t512_ring_norm', \
     $s7 with lines dt 2 lc 4 title 'baseline of f16_h4096_nh32_hd128_s16384_b4_c2x2_t512_ring_norm', \
     $s8 with linespoints lw 2 lc 5 title 'f16_h4096_nh32_hd128_s16384_p16_b1_c2x2_t512_ring_norm', \
     $s10 with linespoints lw 2 lc 6 title 'f16_h4096_nh32_hd128_s16384_p16_b4_c2x2_t512_ring_norm', \
     $s12 with linespoints lw 2 lc 7 title 'f16_h4096_nh32_hd128_s16384_p64_b1_c2x2_t512_ring_norm', \
     $s14 with linespoints lw 2 lc 8 title 'f16_h4096_nh32_hd128_s16384_p64_b4_c2x2_t512_ring_norm', \
     4593.5 with lines lw 3 lc rgb 'black' title 'read ceiling (4594 GB/s)', \
     4234.8 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4235 GB/s)'
