$d0 << EOD
0 0 0 0
0.05 0.366201 -0.360972 1.83934
0.1 0.740886 -0.016142 2.79863
0.15 0.72277 0.0266053 2.85265
0.3 0.966207 0.315887 3.00341
EOD
$d1 << EOD
0 0 0 0
0.05 0.335433 -0.26386 1.76998
0.1 0.299798 -0.274485 1.69956
0.15 0.437619 -0.137692 1.89492
0.3 1.02292 0.357495 4.52393
EOD
$d2 << EOD
0 0 0 0
0.05 0.229952 -1.04475 1.40773
0.1 0.186906 -1.13518 1.35596
0.15 0.386039 -0.91954 1.6255
0.3 0.711415 -0.0799338 1.94592
EOD
$d3 << EOD
0 1.03095 0.356044 3.95752
0.05 0.819689 0.140189 3.15561
0.1 0.671649 -0.129879 1.96754
0.15 0.693546 -0.111254 2.02571
0.3 0.828498 -0.0169845 2.51984
EOD
$d4 << EOD
0 1.03095 0.356044 3.95752
0.05 1.02958 0.381797 2.53258
0.1 1.14041 0.494933 4.39293
0.15 1.07191 0.346046 4.28129
0.3 0.947017 -0.278648 3.03777
EOD
$d5 << EOD
0 1.03095 0.356044 3.95752
0.05 1.10428 0.531772 3.01335
0.1 1.34315 0.346644 4.36565
0.15 1.12041 0.0511834 3.15691
0.3 0.936374 -0.221477 1.77873
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title 'hotpotqa_dev500_ircot.jsonl: normalized F1 (95% CI)' noenhanced
set xlabel 'recompute ratio'
set ylabel 'normalized F1'
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
