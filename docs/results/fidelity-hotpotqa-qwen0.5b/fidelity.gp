set terminal pngcairo size 1000,560 font ',11'
set output 'fidelity.png'
$d << EOD
3.310 0.8750 -0.0011 -0.0117 0.0129 reuse:sim-q4z
3.310 0.8750 -0.0050 -0.0179 0.0066 fusion:sim-q4z
3.740 0.8750 0.0067 -0.0099 0.0259 reuse:sim-r4z
3.740 0.8550 -0.0053 -0.0250 0.0123 fusion:sim-r4z
4.860 0.7000 -0.0301 -0.0595 -0.0012 reuse:sim-r3z
4.860 0.7300 -0.0020 -0.0295 0.0260 fusion:sim-r3z
8.000 0.4000 -0.0553 -0.1025 -0.0083 reuse:sim-8x
8.000 0.4400 -0.0728 -0.1218 -0.0285 fusion:sim-8x
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
