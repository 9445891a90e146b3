set terminal pngcairo size 1000,560 font ',11'
set output 'fidelity.png'
$d << EOD
8.100 0.6667 -0.0667 -0.1778 0.0222 reuse:sim-8x
8.100 0.6667 -0.0389 -0.1167 0.0333 fusion:sim-8x
17.020 0.3333 -0.2261 -0.3583 -0.1061 reuse:sim-16x
17.020 0.2333 -0.2299 -0.4311 -0.0249 fusion:sim-16x
EOD
set title 'hotpotqa_dev500_ircot.jsonl: fidelity against similarity KV by bytes on disk' noenhanced
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
