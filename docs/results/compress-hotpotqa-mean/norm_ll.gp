$d0 << EOD
0 0 0 0
0.15 0.409604 0.202883 0.588451
EOD
$d1 << EOD
0 -2.4923 -4.7113 -1.34527
0.15 -2.32563 -4.59528 -1.21451
EOD
$d2 << EOD
0 -2.49058 -4.70393 -1.34597
0.15 -2.31931 -4.58948 -1.212
EOD
$d3 << EOD
0 -2.36793 -4.55853 -1.25117
0.15 -2.354 -4.54782 -1.24797
EOD
$d4 << EOD
0 -2.36575 -4.55333 -1.25098
0.15 -2.34461 -4.52311 -1.24008
EOD
$d5 << EOD
0 0.496342 0.196805 0.768362
0.15 1.29207 1.11976 1.52956
EOD
$d6 << EOD
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
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a20m)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a20m-q8)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a25m)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a25m-q8)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q8)', \
  $d6 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
