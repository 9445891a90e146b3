$d0 << EOD
0 0 0 0
0.05 -10.6817 -10.8098 6.32923
0.1 -61.1924 -33.7116 22.8719
0.15 -50.3168 -36.2905 18.2496
0.3 -52.1265 -36.2905 17.8154
EOD
$d1 << EOD
0 0 0 0
0.05 -31.1631 -24.6024 11.2389
0.1 -31.1631 -24.6024 11.2389
0.15 -41.8316 -21.5565 13.3624
0.3 -18.7161 -17.3508 11.0468
EOD
$d2 << EOD
0 0 0 0
0.05 -23.9993 -17.8394 12.0127
0.1 -46.5253 -27.5558 16.1054
0.15 -64.1175 -44.9725 20.6767
0.3 -30.9594 -16.4274 13.596
EOD
$d3 << EOD
0 -47.4384 -21.705 14.6247
0.05 -52.323 -34.6306 17.1065
0.1 -9.69751 -19.781 8.27329
0.15 -9.56211 -13.8579 8.70684
0.3 -49.9244 -22.2214 19.2071
EOD
$d4 << EOD
0 -47.4384 -21.705 14.6247
0.05 -5.38011 -12.714 11.0468
0.1 -38.0791 -21.1522 14.2877
0.15 -38.0791 -21.1522 14.2877
0.3 -29.6911 -17.4015 11.1929
EOD
$d5 << EOD
0 -47.4384 -21.705 14.6247
0.05 -42.9264 -20.1883 15.4749
0.1 -34.7516 -18.059 13.5237
0.15 -41.5047 -23.8912 13.4889
0.3 -57.8542 -34.9141 19.4375
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
