# gnuplot script written by fusegen report from bench/results/2026-11-30-nvidia-h200-x2-overlap-settled-f4c220b.json
set terminal png size 1100,700
set output '2026-11-30-nvidia-h200-x2-overlap-settled-f4c220b.png'
set title "NVIDIA H200 x2, 2026-11-30T14:51:10Z (commit f4c220b): time over max(T_gemm, T_comm)" noenhanced
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
"qkv-m4096" 1.362 1.237 1.032
"o-m4096" 1.488 1.394 1.241
"fc1-m4096" 1.064 1.041 1.002
"fc2-m4096" 1.133 1.110 1.072
"qkv-m16384" 1.315 1.201 1.011
"o-m16384" 1.400 1.317 1.164
"fc1-m16384" 1.022 1.001 1.001
"fc2-m16384" 1.116 1.084 1.056
"ag-m6144-k1536" 1.299 1.213 1.084
"ag-m4096-k1024" 1.385 1.279 1.139
"peer-ag-fc1-m4096" 1.138 1.095 1.031
"peer-ag-fc1-m16384" 1.095 1.032 0.984
"peer-rs-qkv-m4096" 1.532 1.444 1.256
"peer-rs-fc1-m4096" 1.444 1.343 1.151
"peer-rs-qkv-m16384" 1.423 1.333 1.182
"peer-rs-fc1-m16384" 1.417 1.310 1.148
EOD
plot $d using 2:xtic(1) title 'serial NCCL', '' using 3 title 'serial CE', '' using 4 title 'shard-overlap', 1 with lines lw 2 lc rgb 'black' title 'max(T_gemm, T_comm)'
