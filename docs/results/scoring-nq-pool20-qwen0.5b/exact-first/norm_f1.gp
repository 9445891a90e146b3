$d0 << EOD
0 0 0 0
0.15 0.0839377 -0.0302772 0.218547
EOD
$d1 << EOD
0 0 0 0
0.15 0.0165315 -0.0578768 0.110892
EOD
$d2 << EOD
0 0 0 0
0.15 0.259423 0.0871762 0.430678
EOD
$d3 << EOD
0 0.577371 0.357674 0.794735
0.15 0.741895 0.540233 0.962511
EOD
$d4 << EOD
0 0.577371 0.357674 0.794735
0.15 0.712198 0.493502 0.947408
EOD
$d5 << EOD
0 0.577371 0.357674 0.794735
0.15 0.831743 0.660279 1.02484
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title 'nq_open_pool20_synthetic.jsonl.gz: normalized F1 (95% CI)' noenhanced
set xlabel 'recompute ratio'
set ylabel 'normalized F1'
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
