$d0 << EOD
0 0 0 0
0.15 0.865297 -0.568622 4.05632
EOD
$d1 << EOD
0 -0.204171 -5.58824 3.31434
0.15 0.0263728 -3.59016 2.37234
EOD
$d2 << EOD
0 -0.204171 -5.58824 3.31434
0.15 0.0263728 -3.59016 2.37234
EOD
$d3 << EOD
0 -0.260899 -3.88842 2.59088
0.15 -0.772514 -7.54002 3.9823
EOD
$d4 << EOD
0 0.333321 -2.31205 2.69418
0.15 -0.00785871 -4.19941 2.7708
EOD
$d5 << EOD
0 0.333321 -2.31205 2.69418
0.15 0.0777201 -3.82864 2.17986
EOD
$d6 << EOD
0 -0.52974 -5.77491 2.97183
0.15 -0.628127 -6.50751 3.75415
EOD
$d7 << EOD
0 -0.501587 -6.28243 3.34674
0.15 0.0879603 -4.08959 2.60525
EOD
$d8 << EOD
0 1.22689 -2.13973 7.63882
0.15 1.5522 -1.42783 7.34804
EOD
$d9 << EOD
0 -0.800162 -7.54002 3.9823
0.15 -0.642719 -7.27307 3.85973
EOD
$d10 << EOD
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
