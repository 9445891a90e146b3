$d0 << EOD
0 0 0 0
0.05 0.0972893 0.0166167 0.215539
0.1 0.165333 0.0389027 0.33734
0.15 0.215599 0.0558582 0.414385
0.3 0.413162 0.245376 0.640557
EOD
$d1 << EOD
0 0 0 0
0.05 0.22058 0.116122 0.386137
0.1 0.323483 0.203454 0.545125
0.15 0.395498 0.253512 0.664761
0.3 0.454352 0.242596 0.735252
EOD
$d2 << EOD
0 0 0 0
0.05 0.222294 0.110939 0.405202
0.1 0.303319 0.146454 0.517121
0.15 0.308978 0.118959 0.515611
0.3 0.35331 0.131965 0.581071
EOD
$d3 << EOD
0 -0.16379 -0.659714 0.147102
0.05 -0.0125615 -0.4473 0.28269
0.1 0.0239623 -0.427816 0.298357
0.15 0.133159 -0.280425 0.419839
0.3 0.369641 -0.174197 0.729854
EOD
$d4 << EOD
0 -0.16379 -0.659714 0.147102
0.05 0.0165074 -0.379967 0.321894
0.1 0.138159 -0.204184 0.435153
0.15 0.193257 -0.122953 0.496868
0.3 0.432728 0.0944602 0.755618
EOD
$d5 << EOD
0 -0.16379 -0.659714 0.147102
0.05 0.161058 -0.191256 0.465059
0.1 0.291449 -0.028208 0.605782
0.15 0.361325 0.0630444 0.679459
0.3 0.344269 -0.126874 0.72361
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
