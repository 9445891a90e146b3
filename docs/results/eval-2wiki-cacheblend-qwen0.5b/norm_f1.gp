$d0 << EOD
0 0 -0 0
0.05 1.26116 -4.87153 9.67712
0.1 1.8749 -7.20388 7.96532
0.15 1.34123 -6.29722 9.95973
0.3 3.10428 -21.3605 18.035
EOD
$d1 << EOD
0 0 -0 0
0.05 -0.703503 -4.87826 6.32707
0.1 1.80594 -6.81356 14.5462
0.15 0.969462 -5.01172 8.8807
0.3 1.22684 -4.66108 8.95417
EOD
$d2 << EOD
0 0 -0 0
0.05 0.653253 -9.11235 9.04494
0.1 -0.512716 -15.7704 20.1128
0.15 0.662803 -3.8871 7.27363
0.3 0.735573 -4.07278 6.90172
EOD
$d3 << EOD
0 -0.0334816 -10.8244 17.0112
0.05 -0.54824 -13.0502 18.8182
0.1 1.16721 -3.28678 6.12338
0.15 1.81902 -6.73077 8.20042
0.3 0.549893 -3.60652 6.77778
EOD
$d4 << EOD
0 -0.0334816 -10.8244 17.0112
0.05 -0.194344 -12.3599 17.9079
0.1 0.712918 -11.7932 16.6457
0.15 2.516 -14.4858 15.8257
0.3 0.570728 -11.4915 16.8352
EOD
$d5 << EOD
0 -0.0334816 -10.8244 17.0112
0.05 -0.229905 -11.7992 16.6087
0.1 -0.150119 -12.7853 21.4373
0.15 -0.115394 -13.2142 19.6117
0.3 -0.560348 -10.8682 14.3519
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
