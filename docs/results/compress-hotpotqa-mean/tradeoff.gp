set terminal pngcairo size 1000,560 font ',11'
set output 'tradeoff.png'
$d << EOD
23044.0 1.2997 1.1180 1.5642 1.5522 -3.3038 6.2379 similarity
11884.0 1.2921 1.1185 1.5501 1.5522 -3.3038 6.2379 sim-q8
5816.2 -2.3540 -4.6618 -1.2846 0.0195 -2.8444 3.6124 sim-a25m
4670.5 -2.3256 -4.6838 -1.1850 -0.1439 -3.8296 4.2305 sim-a20m
2999.5 -2.3446 -4.6428 -1.2758 0.0195 -2.8444 3.6124 sim-a25m-q8
2408.6 -2.3193 -4.6741 -1.1805 -0.1439 -3.8296 4.2305 sim-a20m-q8
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
