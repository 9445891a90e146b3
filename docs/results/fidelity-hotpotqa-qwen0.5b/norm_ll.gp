$d0 << EOD
0 -2.29366 -3.5988 -1.59387
0.15 -1.32271 -2.47224 -0.742669
EOD
$d1 << EOD
0 -0.0583425 -0.141204 0.0150309
0.15 0.479821 0.257402 0.7087
EOD
$d2 << EOD
0 -0.306897 -0.564255 -0.141088
0.15 0.309235 -0.0421863 0.629727
EOD
$d3 << EOD
0 -0.0931392 -0.192349 -0.0178856
0.15 0.443964 0.222627 0.666732
EOD
$d4 << EOD
0 0 0 0
0.15 0.523917 0.313577 0.752679
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
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-q4z)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-r3z)', \
  $d3 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-r4z)', \
  $d4 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
