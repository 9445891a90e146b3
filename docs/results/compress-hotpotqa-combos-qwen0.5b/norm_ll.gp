$d0 << EOD
0 0 0 0
0.15 0.470512 0.171496 0.765045
EOD
$d1 << EOD
0 -2.25083 -6.8079 -0.544343
0.15 -2.21778 -6.78668 -0.649001
EOD
$d2 << EOD
0 -2.55816 -7.54114 -0.813444
0.15 -2.78521 -8.22563 -0.932407
EOD
$d3 << EOD
0 -2.32819 -6.82663 -0.681407
0.15 -2.22734 -6.88319 -0.686809
EOD
$d4 << EOD
0 -2.24022 -6.85133 -0.511393
0.15 -2.2862 -6.91642 -0.711038
EOD
$d5 << EOD
0 -0.129865 -1.31648 0.466292
0.15 0.0660215 -0.774612 0.463373
EOD
$d6 << EOD
0 0.126405 -0.858973 0.6377
0.15 0.423608 -0.18502 0.781763
EOD
$d7 << EOD
0 0.556344 -0.00703163 1.00031
0.15 0.812009 0.320739 1.16638
EOD
$d8 << EOD
0 0.639154 0.0630917 1.06875
0.15 0.801174 0.32217 1.16212
EOD
$d9 << EOD
0 0.7779 0.26843 1.229
0.15 0.929891 0.525846 1.36608
EOD
$d10 << EOD
0 0.729316 0.135254 1.19178
0.15 0.765786 0.224043 1.22291
EOD
$d11 << EOD
0 0.746862 0.210847 1.23729
0.15 0.750196 0.209546 1.17027
EOD
$d12 << EOD
0 0.767517 0.23695 1.24412
0.15 0.785919 0.302467 1.19107
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
