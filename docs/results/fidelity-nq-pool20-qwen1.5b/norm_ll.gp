$d0 << EOD
0 -0.371976 -0.561579 -0.213417
0.15 0.18282 0.0313991 0.329994
EOD
$d1 << EOD
0 -0.0116484 -0.0412234 0.0118532
0.15 0.376089 0.238532 0.513157
EOD
$d2 << EOD
0 0 0 0
0.15 0.364062 0.228452 0.497129
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
