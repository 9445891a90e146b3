$d0 << EOD
0 0 0 0
0.05 0.188675 -1.38609 1.74772
0.1 0.00977607 -2.97788 2.6889
0.15 0.408593 -2.53533 2.60589
0.3 0.26931 -2.67853 3.86093
EOD
$d1 << EOD
0 0 0 0
0.05 0.180393 -1.47421 1.16186
0.1 0.214584 -1.88315 1.88413
0.15 0.318873 -3.05437 2.3692
0.3 0.541051 -4.08753 4.06019
EOD
$d2 << EOD
0 0 0 0
0.05 0.808902 -4.77001 5.15693
0.1 1.01034 -5.46189 7.03738
0.15 1.01336 -4.71742 5.62505
0.3 0.72714 -2.54411 4.90333
EOD
$d3 << EOD
0 0.772334 -4.99419 4.13546
0.05 1.01522 -4.29053 5.292
0.1 0.872754 -3.67557 5.03893
0.15 1.01678 -4.37594 6.0044
0.3 1.49524 -5.25844 7.85452
EOD
$d4 << EOD
0 0.772334 -4.99419 4.13546
0.05 0.910049 -5.2123 4.0955
0.1 0.603477 -4.49946 3.5221
0.15 0.572475 -4.92148 3.52032
0.3 0.825684 -4.76772 3.80303
EOD
$d5 << EOD
0 0.772334 -4.99419 4.13546
0.05 0.780569 -5.30304 4.2468
0.1 0.915767 -4.6468 5.01253
0.15 1.00814 -5.81474 4.96116
0.3 0.444831 -7.72705 4.46089
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
