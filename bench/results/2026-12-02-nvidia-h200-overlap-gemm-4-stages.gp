# gnuplot script written by fusegen report from bench/results/2026-12-02-nvidia-h200-overlap-gemm-4-stages.json
set terminal png size 1100,700
set output '2026-12-02-nvidia-h200-overlap-gemm-4-stages.png'
set title "NVIDIA H200, 2026-12-02T09:53:36Z (commit unknown): GEMM TFLOP/s" noenhanced
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set grid ytics
set yrange [0:*]
set ylabel 'TFLOP/s'
set xtics rotate by -35 noenhanced
set key below noenhanced
$d << EOD
"m4096 n28672 k8192" 681.3 679.2
"m16384 n28672 k8192" 680.5 680.8
"m4096 n5120 k8192" 694.7 696.4
"m16384 n5120 k8192" 671.1 691.4
"m4096 n8192 k1024" 693.2 646.6
"m16384 n8192 k1024" 642.7 614.3
"m4096 n8192 k14336" 691.1 707.1
"m16384 n8192 k14336" 674.6 675.8
"m4096 n8192 k1536" 717.8 657.9
"m16384 n8192 k1536" 648.5 609.0
"m4096 n8192 k4096" 729.1 689.2
"m16384 n8192 k4096" 668.7 673.5
EOD
plot $d using 2:xtic(1) title 'fused (overlap_gemm)', '' using 3 title 'cuBLASLt'
