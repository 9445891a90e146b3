$d0 << EOD
0 0 0 0
0.05 -1.0998 -9.42431 13.0492
0.1 -0.588365 -6.93537 7.80556
0.15 -0.104072 -5.97475 5.43128
0.3 0.148126 -5.74147 4.96448
EOD
$d1 << EOD
0 0 0 0
0.05 -0.332016 -4.10423 4.375
0.1 -0.300395 -3.84365 3.95833
0.15 0.0166008 -3.5493 2.90566
0.3 -0.939295 -9.71006 12.1773
EOD
$d2 << EOD
0 0 0 0
0.05 -0.521904 -7.24816 6.61378
0.1 0.848022 -6.45802 5.70245
0.15 -0.000989524 -6.08738 5.79137
0.3 0.979248 -6.37991 5.86885
EOD
$d3 << EOD
0 -0.977274 -10.9151 18.175
0.05 -0.67846 -8.2287 13.7038
0.1 -0.578065 -8.56092 13.7869
0.15 -0.710871 -9.52274 15.134
0.3 -0.772847 -10.2979 15.7892
EOD
$d4 << EOD
0 -0.977274 -10.9151 18.175
0.05 -0.811266 -9.59436 17.3622
0.1 -0.778065 -9.8404 15.7406
0.15 -0.778065 -9.28857 14.5984
0.3 -0.645258 -8.39496 12.3417
EOD
$d5 << EOD
0 -0.977274 -10.9151 18.175
0.05 0.21403 -4.92233 6.07571
0.1 -0.117986 -5.11734 8.33333
0.15 -0.394665 -6.92318 12.0026
0.3 0.108101 -3.90262 7.4012
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title 'musique_cacheblend150.jsonl: normalized F1 (95% CI)' noenhanced
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
