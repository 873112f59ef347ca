# gnuplot script written by fusegen report from bench/results/2026-11-30-nvidia-h200-x2-overlap-nccl-e09af41.json
set terminal png size 1100,700
set output '2026-11-30-nvidia-h200-x2-overlap-nccl-e09af41.png'
set title "NVIDIA H200 x2, 2026-11-30T12:25:57Z (commit e09af41): time over max(T_gemm, T_comm)" noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set xtics rotate by -35 noenhanced
set rmargin 10
set key below noenhanced
$d << EOD
"qkv-m4096" 1.354 1.278 1.086
"o-m4096" 1.474 1.385 1.220
"fc1-m4096" 1.058 1.046 1.014
"fc2-m4096" 1.133 1.108 1.059
"qkv-m16384" 1.319 1.225 1.025
"o-m16384" 1.429 1.336 1.169
"fc1-m16384" 1.025 1.006 0.991
"fc2-m16384" 1.093 1.065 1.035
"ag-m6144-k1536" 1.275 1.300 1.150
"ag-m4096-k1024" 1.424 1.549 1.268
"peer-ag-fc1-m4096" 1.123 1.091 1.028
"peer-ag-fc1-m16384" 1.105 1.051 0.999
"peer-rs-qkv-m4096" 1.477 1.392 1.212
"peer-rs-fc1-m4096" 1.440 1.354 1.157
"peer-rs-qkv-m16384" 1.434 1.376 1.194
"peer-rs-fc1-m16384" 1.405 1.301 1.149
EOD
plot $d using 2:xtic(1) title 'serial NCCL', '' using 3 title 'serial CE', '' using 4 title 'shard-overlap', 1 with lines lw 2 lc rgb 'black' title 'max(T_gemm, T_comm)'
