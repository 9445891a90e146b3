$d0 << EOD
0 0 0 0
0.15 0.232158 0.143191 0.323597
EOD
$d1 << EOD
0 0 0 0
0.15 0.142731 0.0846538 0.194569
EOD
$d2 << EOD
0 0 0 0
0.15 0.433634 0.340041 0.522986
EOD
$d3 << EOD
0 0.639453 0.460619 0.794494
0.15 0.711359 0.554241 0.845362
EOD
$d4 << EOD
0 0.639453 0.460619 0.794494
0.15 0.725157 0.592772 0.852658
EOD
$d5 << EOD
0 0.639453 0.460619 0.794494
0.15 0.816119 0.705493 0.925636
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
