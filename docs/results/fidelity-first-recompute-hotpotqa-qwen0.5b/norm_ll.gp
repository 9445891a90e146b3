$d0 << EOD
0 -2.17557 -4.66591 -1.13546
0.15 -1.01775 -2.73603 -0.250118
EOD
$d1 << EOD
0 -0.114545 -0.306683 -0.00397916
0.15 0.207219 -0.196247 0.480806
EOD
$d2 << EOD
0 0 0 0
0.15 0.301767 0.00441775 0.583025
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
plot $d0 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-8x)', \
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-r4z)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
