set terminal pngcairo size 1000,560 font ',11'
set output 'tradeoff.png'
$d << EOD
23044.0 1.0250 0.7594 1.2715 -3.4313 -11.6046 11.1017 similarity
11884.0 1.0240 0.7633 1.2606 -3.4019 -11.5402 10.8782 sim-q8
7855.2 1.0449 0.8634 1.2302 -3.9473 -12.0126 13.7207 sim-q4k4
7272.2 1.0134 0.7672 1.2306 -4.1090 -14.5308 12.9061 sim-q4
4975.2 0.4033 -0.0678 0.7485 -5.8876 -17.7173 20.0260 sim-q2k4
4392.2 0.0680 -0.4941 0.3895 -6.4668 -20.4149 26.2632 sim-q2
4266.5 0.0916 -0.5399 0.5040 -1.1997 -15.3626 16.3554 sim-q2g64k4
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
