# gnuplot script written by fusegen report from bench/results/2026-11-30-nvidia-h200-x2-overlap-lt-2247e03.json
set terminal png size 1100,700
set output '2026-11-30-nvidia-h200-x2-overlap-lt-2247e03.png'
set title "NVIDIA H200 x2, 2026-11-30T14:23:56Z (commit 2247e03): time over max(T_gemm, T_comm)" noenhanced
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
"qkv-m4096" 1.357 1.239 1.042
"o-m4096" 1.451 1.365 1.200
"fc1-m4096" 1.061 1.038 1.007
"fc2-m4096" 1.128 1.103 1.036
"qkv-m16384" 1.309 1.201 1.032
"o-m16384" 1.421 1.332 1.152
"fc1-m16384" 1.030 1.011 1.003
"fc2-m16384" 1.108 1.078 1.026
"ag-m6144-k1536" 1.260 1.185 1.058
"ag-m4096-k1024" 1.348 1.291 1.122
"peer-ag-fc1-m4096" 1.118 1.071 1.016
"peer-ag-fc1-m16384" 1.101 1.051 1.005
"peer-rs-qkv-m4096" 1.467 1.400 1.207
"peer-rs-fc1-m4096" 1.411 1.338 1.217
"peer-rs-qkv-m16384" 1.404 1.323 1.134
"peer-rs-fc1-m16384" 1.433 1.315 1.139
EOD
plot $d using 2:xtic(1) title 'serial NCCL', '' using 3 title 'serial CE', '' using 4 title 'shard-overlap', 1 with lines lw 2 lc rgb 'black' title 'max(T_gemm, T_comm)'
