$d0 << EOD
0 0 0 0
0.05 0.0233251 -0.407276 0.322799
0.1 0.035341 -0.388867 0.331985
0.15 0.39794 0.0175497 0.722299
0.3 0.320897 -0.146189 0.668986
EOD
$d1 << EOD
0 0 0 0
0.05 -0.18991 -0.627703 0.10678
0.1 -0.184255 -0.899082 0.173697
0.15 0.107313 -0.498882 0.469767
0.3 0.301992 -0.261106 0.681739
EOD
$d2 << EOD
0 0 0 0
0.05 -0.0558388 -0.497081 0.238272
0.1 -0.13571 -0.854691 0.264234
0.15 0.0148432 -0.793165 0.438616
0.3 0.596176 0.114642 0.993537
EOD
$d3 << EOD
0 0.820039 0.406936 1.28578
0.05 0.758995 0.291684 1.23844
0.1 0.879659 0.523506 1.32303
0.15 0.847852 0.429151 1.32794
0.3 0.852901 0.534232 1.32875
EOD
$d4 << EOD
0 0.820039 0.406936 1.28578
0.05 0.65646 0.182209 1.14263
0.1 0.761519 0.354767 1.2219
0.15 0.853911 0.496184 1.32404
0.3 0.853911 0.50886 1.25289
EOD
$d5 << EOD
0 0.820039 0.406936 1.28578
0.05 0.672157 0.216213 1.10311
0.1 0.928127 0.60432 1.38686
0.15 0.943122 0.616747 1.43284
0.3 0.928632 0.573724 1.40253
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
