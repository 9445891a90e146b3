set terminal pngcairo size 1000,560 font ',11'
set output 'fidelity.png'
$d << EOD
3.715 0.7750 0.0308 0.0095 0.0577 reuse:sim-r4z
3.715 0.8100 -0.0068 -0.0348 0.0189 fusion:sim-r4z
7.871 0.2000 -0.0194 -0.0501 0.0114 reuse:sim-8x
7.871 0.2700 -0.1277 -0.1791 -0.0781 fusion:sim-8x
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
