$d0 << EOD
0 -1.03137 -7.03952 0.022447
0.15 -0.854734 -7.21068 0.0828115
EOD
$d1 << EOD
0 -0.0208769 -0.493602 0.390707
0.15 0.408535 -0.765732 1.33965
EOD
$d2 << EOD
0 -0.561964 -4.70885 0.0853071
0.15 0.466015 -1.22092 1.47095
EOD
$d3 << EOD
0 0.12463 -0.310094 1.33012
0.15 0.404006 -1.21074 1.4017
EOD
$d4 << EOD
0 0 0 0
0.15 0.502624 -0.889267 1.58683
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
plot $d0 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-8x)', \
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4z)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-r3z)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-r4z)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
