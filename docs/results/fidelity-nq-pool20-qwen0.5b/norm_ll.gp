$d0 << EOD
0 -1.25445 -1.6909 -0.910956
0.15 -0.527777 -0.818776 -0.278974
EOD
$d1 << EOD
0 -0.00444666 -0.0391771 0.0325889
0.15 0.448131 0.358922 0.538241
EOD
$d2 << EOD
0 0 0 0
0.15 0.440212 0.357327 0.525481
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_ll.png'
set title 'nq_open_pool20_synthetic.jsonl.gz: gold-answer log-likelihood recovery (95% CI)' noenhanced
set xlabel 'recompute ratio'
set ylabel 'normalized gold log-likelihood'
set key outside right
set grid
set xrange [-0.01:*]
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 3 lc rgb 'gray'
set label 'full attention' at graph 0.02, first 1 offset 0,0.6 tc rgb 'gray'
plot $d0 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-8x)', \
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-r4z)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
