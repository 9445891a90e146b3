$d0 << EOD
0 0 0 0
0.15 0.470512 0.171496 0.765045
EOD
$d1 << EOD
0 0.126405 -0.858973 0.6377
0.15 0.423608 -0.18502 0.781763
EOD
$d2 << EOD
0 0.7779 0.26843 1.229
0.15 0.929891 0.525846 1.36608
EOD
$d3 << EOD
0 0.746862 0.210847 1.23729
0.15 0.750196 0.209546 1.17027
EOD
$d4 << EOD
0 0.767517 0.23695 1.24412
0.15 0.785919 0.302467 1.19107
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
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2k4)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q8)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
