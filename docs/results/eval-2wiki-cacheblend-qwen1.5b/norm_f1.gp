$d0 << EOD
0 0 -0 0
0.05 0.109643 -4.48454 4.66154
0.1 -0.445178 -12.2453 9
0.15 -0.286658 -10.8763 8.25128
0.3 -0.369881 -9.0625 10
EOD
$d1 << EOD
0 0 -0 0
0.05 -1.38705 -12 13.8889
0.1 -1.47952 -14 14.4444
0.15 -1.47952 -18 14.1573
0.3 -0.61823 -8 9.77528
EOD
$d2 << EOD
0 0 -0 0
0.05 0.0462351 -4.06736 5.3125
0.1 -0.759577 -9.78261 10.6842
0.15 -0.468956 -10.6667 10.6338
0.3 -0.488771 -8.125 9.75
EOD
$d3 << EOD
0 1.11208 -6.77632 9.7076
0.05 1.27236 -5.00794 9.76498
0.1 0.625067 -5.08772 9.21674
0.15 -0.116457 -10.1347 12.3452
0.3 -0.0471042 -10.1347 10.8011
EOD
$d4 << EOD
0 1.11208 -6.77632 9.7076
0.05 0.557255 -5.81827 9.68731
0.1 1.11208 -6 11.3747
0.15 0.834666 -5.09916 8.33416
0.3 1.5097 -6.7308 13.6067
EOD
$d5 << EOD
0 1.11208 -6.77632 9.7076
0.05 0.477763 -4.40476 6.78667
0.1 1.51167 -5.55959 11.4471
0.15 2.21929 -7.4 16.3333
0.3 0.667107 -1.76647 4.81818
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title '2wikimqa_cacheblend_clean102.jsonl: normalized F1 (95% CI)' noenhanced
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
