set terminal pngcairo size 1000,560 font ',11'
set output 'tradeoff.png'
$d << EOD
23044.0 1.0250 0.7594 1.2715 -3.4313 -11.6046 11.1017 similarity
11884.0 1.0240 0.7633 1.2606 -3.4019 -11.5402 10.8782 sim-q8
11557.4 -0.8507 -2.7167 0.1239 8.0113 -18.6796 20.3624 sim-a50
7272.2 1.0134 0.7672 1.2306 -4.1090 -14.5308 12.9061 sim-q4
6554.1 0.9218 0.6448 1.1778 -7.7315 -22.3029 22.5334 sim-q4g64
5706.5 0.9494 0.6538 1.2352 -5.9075 -15.2278 18.0874 sim-q3g64k4
5114.1 0.9250 0.6374 1.2443 -8.8792 -21.7809 22.4305 sim-q3g64
4975.2 0.4033 -0.0678 0.7485 -5.8876 -17.7173 20.0260 sim-q2k4
4266.5 0.0916 -0.5399 0.5040 -1.1997 -15.3626 16.3554 sim-q2g64k4
3321.4 -0.8853 -2.7334 0.0729 7.4582 -16.3149 19.1008 sim-a50-q4g64
2599.1 -0.9958 -2.8728 -0.0628 7.4181 -17.3453 18.8156 sim-a50-q3g64
2468.3 -1.2679 -3.1060 -0.3559 -2.1168 -16.4329 14.9354 sim-a50-q2g64k4
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
