$d0 << EOD
0 0 0 0
0.15 0.865297 -0.568622 4.05632
EOD
$d1 << EOD
0 -0.282886 -5.40834 3.10478
0.15 -0.143907 -4.3239 2.7545
EOD
$d2 << EOD
0 -0.282886 -5.40834 3.10478
0.15 -0.143907 -4.3239 2.7545
EOD
$d3 << EOD
0 -0.282886 -5.40834 3.10478
0.15 0.0195112 -3.60287 1.8036
EOD
$d4 << EOD
0 -0.282886 -5.40834 3.10478
0.15 0.0195112 -3.60287 1.8036
EOD
$d5 << EOD
0 1.22689 -2.13973 7.63882
0.15 1.5522 -1.42783 7.34804
EOD
$d6 << EOD
0 1.22689 -2.13973 7.63882
0.15 1.5522 -1.42783 7.34804
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
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a20m)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a20m-q8)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a25m)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a25m-q8)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q8)', \
  $d6 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
