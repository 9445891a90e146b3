$d0 << EOD
0 -0 -0 -0
0.15 -9.33417 -30.3255 24.6818
EOD
$d1 << EOD
0 9.08831 -18.5966 31.8038
0.15 8.01134 -16.9393 24.7321
EOD
$d2 << EOD
0 8.01008 -18.6312 25.7229
0.15 -2.11677 -23.7108 12.0371
EOD
$d3 << EOD
0 8.21661 -15.961 26.2433
0.15 7.41812 -17.8502 22.7152
EOD
$d4 << EOD
0 9.44383 -20.0893 35.2239
0.15 7.4582 -15.4853 23.3792
EOD
$d5 << EOD
0 5.73535 -14.1346 17.4501
0.15 -1.19969 -16.845 11.7429
EOD
$d6 << EOD
0 -1.81334 -9.4727 7.37579
0.15 -5.88759 -23.3556 15.853
EOD
$d7 << EOD
0 -3.02526 -18.8635 8.36829
0.15 -8.87918 -34.7196 18.3841
EOD
$d8 << EOD
0 -6.23449 -27.3447 15.2002
0.15 -5.9075 -30.2374 12.0636
EOD
$d9 << EOD
0 -7.9841 -32.0547 17.4767
0.15 -4.10898 -17.0241 10.8425
EOD
$d10 << EOD
0 -14.4394 -55.503 35.1824
0.15 -7.73153 -26.2554 17.8825
EOD
$d11 << EOD
0 -12.1979 -36.8005 27.816
0.15 -3.40188 -14.2273 10.887
EOD
$d12 << EOD
0 -12.1979 -36.8005 27.816
0.15 -3.43128 -14.2192 10.917
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
plot $d0 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (independent)', \
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50-q2g64k4)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50-q3g64)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-a50-q4g64)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2g64k4)', \
  $d6 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2k4)', \
  $d7 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q3g64)', \
  $d8 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q3g64k4)', \
  $d9 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4)', \
  $d10 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4g64)', \
  $d11 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q8)', \
  $d12 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
