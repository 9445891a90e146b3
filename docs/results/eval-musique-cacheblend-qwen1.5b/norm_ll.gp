$d0 << EOD
0 0 0 0
0.05 0.26832 0.157043 0.433202
0.1 0.263522 0.121543 0.415182
0.15 0.319083 0.122267 0.521897
0.3 0.38301 0.116945 0.606076
EOD
$d1 << EOD
0 0 0 0
0.05 0.0454776 -0.0698702 0.13463
0.1 0.112879 -0.00747611 0.226566
0.15 0.17634 0.0271923 0.317155
0.3 0.256564 0.017104 0.443819
EOD
$d2 << EOD
0 0 0 0
0.05 0.290657 0.0958532 0.515186
0.1 0.453304 0.192713 0.75591
0.15 0.501467 0.16723 0.806617
0.3 0.718646 0.460156 0.962369
EOD
$d3 << EOD
0 0.58429 0.23303 0.867617
0.05 0.609259 0.257762 0.872019
0.1 0.628688 0.306174 0.889613
0.15 0.576767 0.233645 0.852847
0.3 0.569757 0.219639 0.845519
EOD
$d4 << EOD
0 0.58429 0.23303 0.867617
0.05 0.660895 0.345458 0.911745
0.1 0.649259 0.331537 0.913755
0.15 0.681107 0.361637 0.955246
0.3 0.800844 0.548822 1.04893
EOD
$d5 << EOD
0 0.58429 0.23303 0.867617
0.05 0.705112 0.421156 0.97028
0.1 0.65995 0.336615 0.915874
0.15 0.747998 0.425223 1.00743
0.3 0.849943 0.606784 1.06671
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_ll.png'
set title 'musique_cacheblend150.jsonl: gold-answer log-likelihood recovery (95% CI)' noenhanced
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
