$d0 << EOD
0 0 0 0
0.05 0.193632 -0.0155332 0.568128
0.1 0.368336 0.116526 0.931474
0.15 0.343955 0.0895248 0.937152
0.3 0.516318 0.198601 1.24389
EOD
$d1 << EOD
0 0 0 0
0.05 0.254955 0.133662 0.695764
0.1 0.364299 0.20621 0.94269
0.15 0.327404 0.064429 0.907086
0.3 0.390353 0.109713 1.0292
EOD
$d2 << EOD
0 0 0 0
0.05 0.378563 0.209158 1.03274
0.1 0.557786 0.273555 1.63869
0.15 0.653472 0.320226 1.80507
0.3 0.7457 0.41046 1.97929
EOD
$d3 << EOD
0 0.545052 -0.481748 1.98676
0.05 0.616427 -0.257751 2.03873
0.1 0.778537 -0.0680471 2.34726
0.15 0.774393 -0.0577547 2.27168
0.3 0.879871 0.314612 2.26474
EOD
$d4 << EOD
0 0.545052 -0.481748 1.98676
0.05 0.640006 -0.27972 2.18281
0.1 0.665864 -0.223736 2.18477
0.15 0.703168 -0.133142 2.27089
0.3 0.898835 0.142643 2.86673
EOD
$d5 << EOD
0 0.545052 -0.481748 1.98676
0.05 0.688387 -0.303163 2.45231
0.1 0.763826 -0.195049 2.57843
0.15 0.80599 -0.0122092 2.59157
0.3 0.983082 0.405809 2.70958
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
