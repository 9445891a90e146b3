$d0 << EOD
0 0 0 0
0.15 0.441369 0.213131 0.628013
EOD
$d1 << EOD
0 -0.836843 -2.27312 -0.024695
0.15 -0.850735 -2.68827 0.16232
EOD
$d2 << EOD
0 -1.48673 -3.05968 -0.641283
0.15 -1.26786 -2.97187 -0.343111
EOD
$d3 << EOD
0 -0.902875 -2.35726 -0.0864816
0.15 -0.995844 -2.78132 -0.0397093
EOD
$d4 << EOD
0 -0.892374 -2.33063 -0.0983515
0.15 -0.88526 -2.66394 0.111089
EOD
$d5 << EOD
0 -0.390721 -1.07949 -0.00944918
0.15 0.0915761 -0.602735 0.464226
EOD
$d6 << EOD
0 -0.335099 -0.942665 0.0682476
0.15 0.403286 -0.0623741 0.731239
EOD
$d7 << EOD
0 0.107745 -0.361359 0.456859
0.15 0.924983 0.623039 1.21915
EOD
$d8 << EOD
0 0.291206 -0.192927 0.654416
0.15 0.949379 0.659227 1.22795
EOD
$d9 << EOD
0 0.32694 -0.0123527 0.612694
0.15 1.01339 0.78963 1.22636
EOD
$d10 << EOD
0 0.282401 -0.0825024 0.57729
0.15 0.921769 0.638392 1.18038
EOD
$d11 << EOD
0 0.354346 0.0175461 0.652912
0.15 1.02404 0.78551 1.24753
EOD
$d12 << EOD
0 0.36669 0.0358184 0.665609
0.15 1.02499 0.77857 1.26691
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
