$d0 << EOD
0 0 0 0
0.15 0.409604 0.202883 0.588451
EOD
$d1 << EOD
0 -1.80598 -3.88519 -0.792913
0.15 -2.09598 -4.30171 -0.950993
EOD
$d2 << EOD
0 -1.80461 -3.88413 -0.79306
0.15 -2.09901 -4.30098 -0.953077
EOD
$d3 << EOD
0 -2.72849 -5.27528 -1.38954
0.15 -2.99562 -6.02144 -1.48613
EOD
$d4 << EOD
0 -0.749777 -2.28935 0.103186
0.15 -0.836415 -2.70644 0.144359
EOD
$d5 << EOD
0 -0.756944 -2.29143 0.0922228
0.15 -0.7894 -2.6571 0.212012
EOD
$d6 << EOD
0 -1.9923 -4.07171 -0.818932
0.15 -2.13234 -4.58742 -0.918205
EOD
$d7 << EOD
0 -2.64755 -5.04415 -1.38354
0.15 -1.67054 -3.28802 -0.692759
EOD
$d8 << EOD
0 0.496342 0.196805 0.768362
0.15 1.29207 1.11976 1.52956
EOD
$d9 << EOD
0 -1.36636 -2.7272 -0.525064
0.15 -1.01164 -2.318 -0.209593
EOD
$d10 << EOD
0 0.502828 0.202115 0.783507
0.15 1.2997 1.12289 1.54745
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
plot $d0 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (independent)', \
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a25)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a25-q8)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a25-s8-q8)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50-q8)', \
  $d6 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50-s8-q8)', \
  $d7 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-app25)', \
  $d8 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q8)', \
  $d9 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-s8)', \
  $d10 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
