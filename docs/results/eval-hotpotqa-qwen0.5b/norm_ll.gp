$d0 << EOD
0 0 0 0
0.05 0.147112 0.023836 0.262619
0.1 0.273315 0.0982557 0.428976
0.15 0.357721 0.0591344 0.570746
0.3 0.353541 -0.0505533 0.573638
EOD
$d1 << EOD
0 0 0 0
0.05 0.0946739 -0.00757867 0.183563
0.1 0.170282 0.0207082 0.314494
0.15 0.175789 -0.0153627 0.3448
0.3 0.329259 0.0986655 0.522495
EOD
$d2 << EOD
0 0 0 0
0.05 0.135993 -0.0352885 0.292243
0.1 0.193363 -0.0391228 0.376506
0.15 0.257637 -0.025418 0.439421
0.3 0.250833 -0.339943 0.533823
EOD
$d3 << EOD
0 0.499058 0.137558 0.767331
0.05 0.560529 0.237743 0.803152
0.1 0.5942 0.281792 0.843624
0.15 0.601853 0.297334 0.855683
0.3 0.673428 0.370695 0.929197
EOD
$d4 << EOD
0 0.499058 0.137558 0.767331
0.05 0.661839 0.372505 0.918198
0.1 0.718432 0.467324 0.94596
0.15 0.707594 0.435503 0.917219
0.3 0.785858 0.538973 0.997522
EOD
$d5 << EOD
0 0.499058 0.137558 0.767331
0.05 0.608246 0.311381 0.859722
0.1 0.590683 0.275527 0.835553
0.15 0.65695 0.352152 0.88068
0.3 0.723685 0.437119 0.922865
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_ll.png'
set title 'hotpotqa_dev500_ircot.jsonl: gold-answer log-likelihood recovery (95% CI)' noenhanced
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
