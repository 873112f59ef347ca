# gnuplot script written by fusegen report from bench/results/2026-11-30-nvidia-h200-x2-overlap-chunk-5c8538a.json
set terminal png size 1100,700
set output '2026-11-30-nvidia-h200-x2-overlap-chunk-5c8538a.png'
set title "NVIDIA H200 x2, 2026-11-30T16:29:14Z (commit 5c8538a): time over max(T_gemm, T_comm)" noenhanced
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
"qkv-m4096" 1.357 1.226 1.024 1.027 1.055 1.177
"o-m4096" 1.465 1.376 1.228 1.188 1.094 1.209
"fc1-m4096" 1.072 1.032 1.013 1.007 1.009 1.024
"fc2-m4096" 1.146 1.121 1.066 1.055 1.023 1.060
"qkv-m16384" 1.297 1.186 0.974 0.968 0.977 1.013
"o-m16384" 1.390 1.320 1.155 1.057 0.992 1.007
"fc1-m16384" 1.026 1.025 0.997 1.005 1.011 1.007
"fc2-m16384" 1.086 1.026 0.994 0.963 0.954 0.986
"ag-m6144-k1536" 1.346 1.255 1.105 1.120 1.146 1.439
"ag-m4096-k1024" 1.406 1.290 1.157 1.137 1.283 2.162
"peer-ag-fc1-m4096" 1.128 1.081 1.021 1.055 1.092 1.106
"peer-ag-fc1-m16384" 1.086 1.023 0.978 1.014 1.002 1.019
"peer-rs-qkv-m4096" 1.527 1.430 1.258 1.248 1.189 1.461
"peer-rs-fc1-m4096" 1.430 1.345 1.186 1.219 1.153 1.182
"peer-rs-qkv-m16384" 1.426 1.344 1.202 1.173 1.062 1.068
"peer-rs-fc1-m16384" 1.349 1.226 1.073 1.044 0.945 1.005
EOD
plot $d using 2:xtic(1) title 'serial NCCL', '' using 3 title 'serial CE', '' using 4 title 'shard-overlap', '' using 5 title 'chunk-overlap, 2', '' using 6 title 'chunk-overlap, 4', '' using 7 title 'chunk-overlap, 8', 1 with lines lw 2 lc rgb 'black' title 'max(T_gemm, T_comm)'
