set terminal pngcairo size 1000,560 font ',11'
set output 'fidelity.png'
$d << EOD
3.740 0.9400 -0.0071 -0.0217 0.0025 reuse:sim-r4z
3.740 0.9300 0.0098 -0.0057 0.0288 fusion:sim-r4z
7.990 0.4800 -0.0786 -0.1236 -0.0326 reuse:sim-8x
7.990 0.6000 -0.0824 -0.1294 -0.0316 fusion:sim-8x
EOD
set title 'nq_open_pool20_synthetic.jsonl.gz: fidelity against similarity KV by bytes on disk' noenhanced
set xlabel 'x fewer bytes on disk than similarity (log scale)'
set ylabel 'share of answers identical to similarity'
set y2label 'F1 delta (95% CI)'
set logscale x 2
set yrange [0:1.05]
set y2range [-0.2:0.2]
set ytics nomirror
set y2tics
set grid
set key bottom left
set arrow from 8, graph 0 to 8, graph 1 nohead dt 3 lc rgb 'gray'
set arrow from graph 0, first 0.95 to graph 1, first 0.95 nohead dt 3 lc rgb 'gray'
plot $d using 1:2 with points pt 7 lc 1 title 'identical answers', \
     $d using 1:2:6 with labels offset 0,1 font ',8' notitle noenhanced, \
     $d using ($1*1.03):3:4:5 axes x1y2 with yerrorbars pt 6 lc 3 title 'F1 delta'
