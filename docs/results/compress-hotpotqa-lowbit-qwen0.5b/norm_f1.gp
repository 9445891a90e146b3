$d0 << EOD
0 0 0 0
0.15 0.742273 0.201607 1.36318
EOD
$d1 << EOD
0 0.0155822 -1.3558 0.943698
0.15 0.483277 -0.228739 1.22021
EOD
$d2 << EOD
0 0.807664 -0.491159 2.33403
0.15 1.03049 0.303319 2.21409
EOD
$d3 << EOD
0 0.83894 -0.452132 2.39142
0.15 1.18961 0.607031 2.35084
EOD
$d4 << EOD
0 0.83894 -0.452132 2.39142
0.15 1.41549 0.769438 3.10389
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
plot $d0 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (independent)', \
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2k4)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q8)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
