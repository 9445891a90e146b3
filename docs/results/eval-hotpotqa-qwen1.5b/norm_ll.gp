$d0 << EOD
0 0 0 0
0.05 0.131664 -0.0869805 0.33403
0.1 0.122127 -0.169044 0.335372
0.15 0.336728 -0.0388059 0.607959
0.3 0.454653 0.0303104 0.719384
EOD
$d1 << EOD
0 0 0 0
0.05 -0.0186128 -0.15183 0.0732335
0.1 0.0776685 -0.103863 0.23039
0.15 0.164211 -0.0243834 0.342894
0.3 0.350243 0.170291 0.545123
EOD
$d2 << EOD
0 0 0 0
0.05 0.10091 -0.0878838 0.229373
0.1 0.0589017 -0.277031 0.256192
0.15 0.1368 -0.501542 0.479875
0.3 0.422382 -0.0859663 0.68718
EOD
$d3 << EOD
0 0.729574 0.469778 0.933847
0.05 0.725508 0.466098 0.93086
0.1 0.736345 0.476936 0.94763
0.15 0.7435 0.478552 0.949695
0.3 0.748517 0.504636 0.918972
EOD
$d4 << EOD
0 0.729574 0.469778 0.933847
0.05 0.712139 0.456732 0.91458
0.1 0.689146 0.414755 0.882936
0.15 0.676047 0.387147 0.86718
0.3 0.756556 0.51532 0.923165
EOD
$d5 << EOD
0 0.729574 0.469778 0.933847
0.05 0.735764 0.457706 0.937504
0.1 0.78895 0.54442 0.972018
0.15 0.825132 0.604576 0.994702
0.3 0.878911 0.674469 1.02841
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_ll.png'
set title 'hotpotqa_dev500_ircot.jsonl: gold-answer log-likelihood recovery (95% CI)' noenhanced
set xlabel 'recompute ratio'
set ylabel 'normalized gold log-likelihood'
set key outside right
set grid
set xrange [-0.01:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 3 lc rgb 'gray'
set label 'full attention' at graph 0.02, first 1 offset 0,0.6 tc rgb 'gray'
plot $d0 using 1:2:3:4 with yerrorlines lc 1 dt 2 pt 6 title 'cacheblend (independent)', \
  $d1 using 1:2:3:4 with yerrorlines lc 2 dt 2 pt 6 title 'a3 (independent)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (independent)', \
  $d3 using 1:2:3:4 with yerrorlines lc 1 dt 1 pt 7 title 'cacheblend (similarity)', \
  $d4 using 1:2:3:4 with yerrorlines lc 2 dt 1 pt 7 title 'a3 (similarity)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
