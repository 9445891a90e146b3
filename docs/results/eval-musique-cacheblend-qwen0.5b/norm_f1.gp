$d0 << EOD
0 -0 -0 -0
0.05 1.2967 -4.81655 7.00948
0.1 -0.0414836 -6.56441 9.10219
0.15 3.10619 -8.34074 12.9581
0.3 -0.544073 -7.72641 9.92638
EOD
$d1 << EOD
0 -0 -0 -0
0.05 -0.263261 -6.03282 5.59225
0.1 -1.94061 -10.8666 10.5927
0.15 -0.834914 -8.1228 6.91332
0.3 -0.870311 -8.02811 7.25465
EOD
$d2 << EOD
0 -0 -0 -0
0.05 -0.84312 -8.98449 8.17637
0.1 2.71968 -9.29417 9.06361
0.15 0.898051 -5.29611 6.7615
0.3 0.461277 -6.8556 7.65969
EOD
$d3 << EOD
0 -0.564426 -12.2086 11.1624
0.05 -0.486702 -10.8255 11.0191
0.1 -0.940903 -12.0265 11.8919
0.15 -0.436945 -10.3557 10.8253
0.3 1.99759 -9.16189 10.6557
EOD
$d4 << EOD
0 -0.564426 -12.2086 11.1624
0.05 -0.133179 -12.0246 10.9099
0.1 -0.54225 -11.9612 10.6276
0.15 1.39654 -10.004 7.99547
0.3 0.414779 -8.03158 7.66294
EOD
$d5 << EOD
0 -0.564426 -12.2086 11.1624
0.05 1.92791 -13.4767 10.139
0.1 2.72453 -13.4827 10.8956
0.15 2.71017 -13.6228 11.0144
0.3 3.11646 -14.8425 12.173
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title 'musique_cacheblend150.jsonl: normalized F1 (95% CI)' noenhanced
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
