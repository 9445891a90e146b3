$d0 << EOD
0 0 0 0
0.05 0.963537 0.105263 1.89474
0.1 0.00428972 -2.73684 3.58237
0.15 0.00428972 -2.73684 3.58237
0.3 0.00428972 -2.73684 3.58237
EOD
$d1 << EOD
0 0 0 0
0.05 1.38987 -3.60462 34.1053
0.1 0.00428972 -2.73684 3.58237
0.15 1.78575 -9.28571 29.8446
0.3 1.04347 0.105263 1.89474
EOD
$d2 << EOD
0 0 0 0
0.05 4.78963 -24.6316 72.7955
0.1 3.83038 -22.1438 47.9432
0.15 2.2716 -15.9438 28.8182
0.3 1.13795 -5.23803 27.9234
EOD
$d3 << EOD
0 -0.809225 -19.8571 8.00232
0.05 0.150022 -19.8571 5.94092
0.1 0.150022 -19.8571 5.94092
0.15 -0.809225 -19.8571 8.00232
0.3 -0.849978 -20.8571 8.15079
EOD
$d4 << EOD
0 -0.809225 -19.8571 8.00232
0.05 1.21516 -0 2
0.1 1.04075 -0 2
0.15 1.04075 -0 2
0.3 0.0815047 -2.81529 3.38211
EOD
$d5 << EOD
0 -0.809225 -19.8571 8.00232
0.05 0.860893 -0 2
0.1 0.783678 0.105263 1.89474
0.15 0.783678 0.105263 1.89474
0.3 2.82493 -10.372 26.64
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title 'musique_train100_hipporag.jsonl: normalized F1 (95% CI)' noenhanced
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
