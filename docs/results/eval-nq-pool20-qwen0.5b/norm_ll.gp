$d0 << EOD
0 0 0 0
0.05 0.126125 0.0764913 0.179861
0.1 0.174378 0.106251 0.244794
0.15 0.227059 0.142018 0.31512
0.3 0.369877 0.270992 0.478898
EOD
$d1 << EOD
0 0 0 0
0.05 0.0544996 0.0192412 0.0942832
0.1 0.103157 0.0534467 0.148977
0.15 0.131279 0.0751069 0.184232
0.3 0.238051 0.158333 0.310529
EOD
$d2 << EOD
0 0 0 0
0.05 0.208444 0.146091 0.26946
0.1 0.331952 0.257992 0.410199
0.15 0.412646 0.317426 0.49991
0.3 0.566973 0.468039 0.66248
EOD
$d3 << EOD
0 0.319641 0.0935135 0.51343
0.05 0.314148 0.0767592 0.504294
0.1 0.523721 0.337981 0.689963
0.15 0.577341 0.407688 0.734065
0.3 0.706421 0.553524 0.858086
EOD
$d4 << EOD
0 0.319641 0.0935135 0.51343
0.05 0.423485 0.216648 0.592677
0.1 0.453503 0.25674 0.619141
0.15 0.481253 0.302776 0.634487
0.3 0.505333 0.3428 0.651073
EOD
$d5 << EOD
0 0.319641 0.0935135 0.51343
0.05 0.438057 0.247945 0.604814
0.1 0.507333 0.338285 0.655118
0.15 0.549004 0.379909 0.700081
0.3 0.639543 0.486386 0.765564
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
plot $d0 using 1:2:3:4 with yerrorlines lc 1 dt 2 pt 6 title 'cacheblend (independent)', \
  $d1 using 1:2:3:4 with yerrorlines lc 2 dt 2 pt 6 title 'a3 (independent)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (independent)', \
  $d3 using 1:2:3:4 with yerrorlines lc 1 dt 1 pt 7 title 'cacheblend (similarity)', \
  $d4 using 1:2:3:4 with yerrorlines lc 2 dt 1 pt 7 title 'a3 (similarity)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
