$d0 << EOD
0 -0 -0 -0
0.15 -9.33417 -30.3255 24.6818
EOD
$d1 << EOD
0 9.76112 -20.474 38.5957
0.15 -6.4668 -38.2902 14.997
EOD
$d2 << EOD
0 5.73535 -14.1346 17.4501
0.15 -1.19969 -16.845 11.7429
EOD
$d3 << EOD
0 -1.81334 -9.4727 7.37579
0.15 -5.88759 -23.3556 15.853
EOD
$d4 << EOD
0 -7.9841 -32.0547 17.4767
0.15 -4.10898 -17.0241 10.8425
EOD
$d5 << EOD
0 -11.7783 -42.6788 27.1176
0.15 -3.94732 -16.2553 11.2337
EOD
$d6 << EOD
0 -12.1979 -36.8005 27.816
0.15 -3.40188 -14.2273 10.887
EOD
$d7 << EOD
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
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2g64k4)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q2k4)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4k4)', \
  $d6 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q8)', \
  $d7 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
