$d0 << EOD
0 0 0 0
0.15 0.840994 -2.62112 4.19416
EOD
$d1 << EOD
0 0 0 0
0.15 1.37509 -7.79022 6.7254
EOD
$d2 << EOD
0 0 0 0
0.15 1.65043 -7.96363 8.12767
EOD
$d3 << EOD
0 1.63312 -5.65817 6.76993
0.15 1.79758 -8.51857 8.22671
EOD
$d4 << EOD
0 1.63312 -5.65817 6.76993
0.15 0.596732 -1.64461 3.2802
EOD
$d5 << EOD
0 1.63312 -5.65817 6.76993
0.15 0.886186 -1.1658 3.43626
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title 'nq_open_pool20_synthetic.jsonl.gz: normalized F1 (95% CI)' noenhanced
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
