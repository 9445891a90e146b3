$d0 << EOD
0 0 0 0
0.15 0.742273 0.201607 1.36318
EOD
$d1 << EOD
0 -0.217406 -3.21357 0.772115
0.15 -0.339718 -2.41918 0.280569
EOD
$d2 << EOD
0 -0.22044 -2.73535 0.6261
0.15 -0.449593 -3.17422 0.160961
EOD
$d3 << EOD
0 -0.159257 -2.69225 0.668667
0.15 -0.203108 -2.18081 0.480408
EOD
$d4 << EOD
0 -0.171024 -2.82909 0.80202
0.15 -0.236014 -2.10225 0.412618
EOD
$d5 << EOD
0 0.125226 -1.28118 1.28182
0.15 0.385821 -0.320236 1.82397
EOD
$d6 << EOD
0 0.0155822 -1.3558 0.943698
0.15 0.483277 -0.228739 1.22021
EOD
$d7 << EOD
0 0.365068 -0.808566 1.41099
0.15 0.887928 0.23865 1.75904
EOD
$d8 << EOD
0 0.47627 -0.759787 1.27427
0.15 1.08855 0.544201 2.3707
EOD
$d9 << EOD
0 0.807664 -0.491159 2.33403
0.15 1.03049 0.303319 2.21409
EOD
$d10 << EOD
0 0.9374 -0.0708124 2.57113
0.15 0.816497 -0.153279 1.85356
EOD
$d11 << EOD
0 0.83894 -0.452132 2.39142
0.15 1.18961 0.607031 2.35084
EOD
$d12 << EOD
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
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50-q2g64k4)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50-q3g64)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50-q4g64)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2g64k4)', \
  $d6 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2k4)', \
  $d7 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q3g64)', \
  $d8 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q3g64k4)', \
  $d9 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4)', \
  $d10 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4g64)', \
  $d11 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q8)', \
  $d12 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
