set terminal pngcairo size 1000,560 font ',11'
set output 'tradeoff.png'
$d << EOD
12292.0 0.7859 0.3104 1.1437 1.4155 0.8026 3.3951 similarity
6340.0 0.7502 0.2290 1.1139 1.1896 0.6143 2.4952 sim-q8
3882.2 0.9299 0.5479 1.2828 1.0305 0.3861 2.3540 sim-q4
2668.1 0.4236 -0.1380 0.7953 0.4833 -0.1662 1.2226 sim-q2k4
EOD
set title 'hotpotqa_dev500_ircot.jsonl: fusion at 0.15 over compressed KV (40 questions, 95% CI)' noenhanced
set xlabel 'stored bytes per chunk token (log scale)'
set ylabel 'normalized quality (0 = reuse, 1 = full)'
set logscale x 2
set grid
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 3 lc rgb 'gray'
plot $d using 1:2:3:4 with yerrorbars pt 7 lc 1 title 'gold log-likelihood recovery', \
     $d using 1:2:8 with labels offset 0,1 font ',9' notitle noenhanced, \
     $d using ($1*1.04):5:6:7 with yerrorbars pt 6 lc 3 title 'F1 (normalized)'
