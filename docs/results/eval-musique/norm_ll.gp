$d0 << EOD
0 0 0 0
0.05 0.0937108 0.0125021 0.162207
0.1 0.315358 0.194699 0.447816
0.15 0.40836 0.276019 0.558954
0.3 0.582142 0.433852 0.721807
EOD
$d1 << EOD
0 0 0 0
0.05 0.138689 0.0628688 0.241674
0.1 0.230388 0.135209 0.365214
0.15 0.314327 0.196804 0.462268
0.3 0.668853 0.5005 0.858689
EOD
$d2 << EOD
0 0 0 0
0.05 0.246185 0.0987184 0.393086
0.1 0.383308 0.210471 0.53266
0.15 0.435078 0.238987 0.579866
0.3 0.60833 0.428259 0.738065
EOD
$d3 << EOD
0 0.44137 0.136794 0.651404
0.05 0.397728 0.0782778 0.602195
0.1 0.387207 0.0831448 0.589603
0.15 0.404125 0.121668 0.589216
0.3 0.480615 0.242254 0.655491
EOD
$d4 << EOD
0 0.44137 0.136794 0.651404
0.05 0.527376 0.283367 0.719876
0.1 0.531908 0.299752 0.716659
0.15 0.551859 0.324724 0.729648
0.3 0.702347 0.533969 0.847744
EOD
$d5 << EOD
0 0.44137 0.136794 0.651404
0.05 0.72873 0.512669 0.921385
0.1 0.816493 0.642455 0.97513
0.15 0.876328 0.73769 0.994504
0.3 0.952116 0.850593 1.02737
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_ll.png'
set title 'musique_train100_hipporag.jsonl: gold-answer log-likelihood recovery (95% CI)' noenhanced
set xlabel 'recompute ratio'
set ylabel 'normalized gold log-likelihood'
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
