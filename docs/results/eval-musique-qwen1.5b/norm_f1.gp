$d0 << EOD
0 0 0 0
0.05 0.396825 0 1.08333
0.1 0.522377 0.0343311 1.67946
0.15 0.477026 0.100877 1.29574
0.3 1.03477 0.462814 3.30769
EOD
$d1 << EOD
0 0 0 0
0.05 0.396825 -0.405405 1.08696
0.1 0.555556 0.144928 1.78571
0.15 0.47619 -0.0338983 1.47619
0.3 0.333333 -0.414634 1.2619
EOD
$d2 << EOD
0 0 0 0
0.05 0.383598 0.0588235 1.48551
0.1 0.460317 -0.392857 1.42857
0.15 0.442177 -0.138015 1.57143
0.3 0.0793651 -1.07143 0.428571
EOD
$d3 << EOD
0 0.693122 -0.511111 1.64615
0.05 0.817838 -0.0913508 1.87111
0.1 0.88133 0.0275689 1.9701
0.15 0.727891 -0.260771 1.6455
0.3 1.01058 0.238095 2.2619
EOD
$d4 << EOD
0 0.693122 -0.511111 1.64615
0.05 1.01587 0.34 2.39286
0.1 1.12169 0.485876 2.6
0.15 0.804233 -0.152542 1.65217
0.3 1.03477 0.562585 2.875
EOD
$d5 << EOD
0 0.693122 -0.511111 1.64615
0.05 0.962963 0.367232 2.24324
0.1 0.857143 0.126984 1.91919
0.15 0.910053 0.138211 2.33333
0.3 0.857143 0.220513 1.92248
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
