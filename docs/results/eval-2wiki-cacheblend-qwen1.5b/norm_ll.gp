$d0 << EOD
0 0 0 0
0.05 0.285901 -0.00234729 0.873492
0.1 0.329692 -0.0854375 1.08311
0.15 0.382337 -0.0255239 1.08879
0.3 0.624996 0.237374 1.44933
EOD
$d1 << EOD
0 0 0 0
0.05 -0.0406521 -0.41951 0.0946059
0.1 0.0446261 -0.286047 0.246423
0.15 0.206575 -0.0412182 0.557003
0.3 0.334959 0.000604527 0.750816
EOD
$d2 << EOD
0 0 0 0
0.05 0.0200676 -0.469403 0.321721
0.1 0.026754 -0.725245 0.420841
0.15 0.0769256 -0.762562 0.455545
0.3 0.217302 -0.791405 0.556915
EOD
$d3 << EOD
0 0.837223 0.153179 1.57913
0.05 0.896395 0.28084 1.71969
0.1 0.916443 0.350182 1.76518
0.15 0.939556 0.388655 1.8036
0.3 0.856129 0.0835308 1.52147
EOD
$d4 << EOD
0 0.837223 0.153179 1.57913
0.05 0.901778 0.312904 1.65786
0.1 0.957395 0.407206 1.86781
0.15 0.985149 0.469546 1.95101
0.3 0.963764 0.37699 1.79676
EOD
$d5 << EOD
0 0.837223 0.153179 1.57913
0.05 0.932281 0.360852 1.82828
0.1 0.929419 0.182421 1.60553
0.15 0.796505 -0.0359989 1.33437
0.3 0.661076 -0.595451 1.08901
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_ll.png'
set title '2wikimqa_cacheblend_clean102.jsonl: gold-answer log-likelihood recovery (95% CI)' noenhanced
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
