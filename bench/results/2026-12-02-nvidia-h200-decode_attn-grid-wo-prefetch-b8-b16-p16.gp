# gnuplot script written by fusegen report from bench/results/2026-12-02-nvidia-h200-decode_attn-grid-wo-prefetch-b8-b16-p16.json
set terminal png size 1100,900
set output '2026-12-02-nvidia-h200-decode_attn-grid-wo-prefetch-b8-b16-p16.png'
set title "NVIDIA H200, 2026-12-02T04:37:38Z (commit unknown)" noenhanced
set xlabel 'cached tokens S'
set ylabel 'GB/s'
set logscale x 2
set xtics 2
set format x '%.0f'
set grid
set key below left Left reverse noenhanced height 2
set yrange [0:*]
$s0 << EOD
1024 2773.8
2048 3194.8
4096 3604.2
8192 3898.0
16384 4102.0
EOD
$s1 << EOD
1024 2016.2
2048 2641.2
4096 3291.5
8192 3789.7
16384 3976.2
EOD
$s2 << EOD
1024 2415.0
2048 2857.3
4096 3292.1
8192 3666.0
16384 3987.7
EOD
$s3 << EOD
1024 1849.0
2048 2342.8
4096 2882.2
8192 3432.2
16384 3857.9
EOD
$s4 << EOD
1024 2718.6
2048 3152.5
4096 3564.5
8192 3853.1
16384 4007.8
EOD
$s5 << EOD
1024 1843.6
2048 2403.4
4096 2976.1
8192 3414.5
16384 3442.4
EOD
plot $s0 with linespoints lw 2 lc 1 title 'f16_h4096_nh32_hd128_s16384_b16_grid_t512_norm', \
     $s1 with lines dt 2 lc 1 title 'baseline of f16_h4096_nh32_hd128_s16384_b16_grid_t512_norm', \
     $s2 with linespoints lw 2 lc 2 title 'f16_h4096_nh32_hd128_s16384_b8_grid_t512_norm', \
     $s3 with lines dt 2 lc 2 title 'baseline of f16_h4096_nh32_hd128_s16384_b8_grid_t512_norm', \
     $s4 with linespoints lw 2 lc 3 title 'f16_h4096_nh32_hd128_s16384_p16_b16_grid_t512_norm', \
     $s5 with lines dt 2 lc 3 title 'baseline of f16_h4096_nh32_hd128_s16384_p16_b16_grid_t512_norm', \
     4507.0 with lines lw 3 lc rgb 'black' title 'read ceiling (4507 GB/s)', \
     4264.7 with lines dt 3 lc rgb 'gray40' title 'copy ceiling (4265 GB/s)'
