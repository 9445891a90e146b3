set terminal pngcairo size 1000,560 font ',11'
set output 'tradeoff.png'
$d << EOD
23044.0 1.2997 1.1180 1.5642 1.5522 -3.3038 6.2379 similarity
16900.0 -1.0116 -2.2609 -0.1825 -0.6427 -6.4785 5.8055 sim-s8
11884.0 1.2921 1.1185 1.5501 1.5522 -3.3038 6.2379 sim-q8
11561.6 -0.8364 -2.8729 0.1049 -0.0079 -3.2084 4.4544 sim-a50
5962.4 -0.7894 -2.8076 0.1991 0.0777 -2.9848 3.7206 sim-a50-q8
5816.2 -2.0960 -4.2550 -1.0107 0.0264 -2.7574 3.9385 sim-a25
5816.2 -1.6705 -3.2815 -0.7352 0.0880 -3.4660 4.5648 sim-app25
4373.0 -2.1323 -4.5430 -0.9318 -0.6281 -6.2260 5.1685 sim-a50-s8-q8
2999.5 -2.0990 -4.2504 -1.0264 0.0264 -2.7574 3.9385 sim-a25-q8
2199.9 -2.9956 -6.0864 -1.5910 -0.7725 -6.9301 6.0492 sim-a25-s8-q8
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
