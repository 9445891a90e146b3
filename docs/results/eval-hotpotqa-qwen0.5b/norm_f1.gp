$d0 << EOD
0 0 0 0
0.05 0.0605259 -1.23655 0.792369
0.1 0.364881 -0.36207 1.40846
0.15 0.616339 -0.0742023 2.10933
0.3 0.326296 -0.566477 1.52922
EOD
$d1 << EOD
0 0 0 0
0.05 0.328564 -0.268206 1.64566
0.1 0.400462 -0.261619 1.82936
0.15 0.331316 -0.772586 2.1187
0.3 0.193631 -1.40852 1.05231
EOD
$d2 << EOD
0 0 0 0
0.05 0.17665 -1.10913 1.31765
0.1 0.24978 -1.0907 1.05506
0.15 0.611563 -0.311358 1.65441
0.3 0.900863 -0.0629517 2.89546
EOD
$d3 << EOD
0 0.42723 -1.38999 2.07724
0.05 0.462106 -1.28997 2.02757
0.1 0.582919 -1.10887 2.45451
0.15 0.473089 -0.970124 1.9868
0.3 0.798666 -0.272539 2.94341
EOD
$d4 << EOD
0 0.42723 -1.38999 2.07724
0.05 0.624704 -1.06237 2.48269
0.1 0.608985 -0.972046 2.61263
0.15 0.886597 -0.318709 2.91186
0.3 1.04857 0.11344 3.14176
EOD
$d5 << EOD
0 0.42723 -1.38999 2.07724
0.05 0.939622 -0.390634 2.98279
0.1 1.11627 0.383034 3.95975
0.15 1.09048 0.304991 3.47439
0.3 1.00363 0.229831 3.48358
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title 'hotpotqa_dev500_ircot.jsonl: normalized F1 (95% CI)' noenhanced
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
