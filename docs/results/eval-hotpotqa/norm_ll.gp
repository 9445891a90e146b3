$d0 << EOD
0 0 0 0
0.05 0.109198 -0.0322071 0.236216
0.1 0.229124 0.0776473 0.376206
0.15 0.330541 0.173931 0.490171
0.3 0.603571 0.484843 0.749571
EOD
$d1 << EOD
0 0 0 0
0.05 0.13256 0.0768474 0.216872
0.1 0.106388 0.0219889 0.182417
0.15 0.164053 0.0559652 0.262421
0.3 0.530032 0.39474 0.719782
EOD
$d2 << EOD
0 0 0 0
0.05 0.153022 0.0107274 0.272427
0.1 0.242971 0.0423452 0.401674
0.15 0.324104 0.106718 0.491926
0.3 0.581909 0.347365 0.767122
EOD
$d3 << EOD
0 0.402731 0.0326151 0.65288
0.05 0.241044 -0.119102 0.47158
0.1 0.2093 -0.147183 0.44682
0.15 0.226583 -0.126989 0.464699
0.3 0.309967 -0.0281909 0.540643
EOD
$d4 << EOD
0 0.402731 0.0326151 0.65288
0.05 0.61357 0.312576 0.834415
0.1 0.604418 0.317931 0.807187
0.15 0.572603 0.30362 0.769524
0.3 0.815583 0.603156 0.999258
EOD
$d5 << EOD
0 0.402731 0.0326151 0.65288
0.05 0.857299 0.609944 1.0577
0.1 1.0743 0.873803 1.26208
0.15 1.24637 1.09141 1.44235
0.3 1.34886 1.21606 1.55827
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
plot $d0 using 1:2:3:4 with yerrorlines lc 1 dt 2 pt 6 title 'cacheblend (independent)', \
  $d1 using 1:2:3:4 with yerrorlines lc 2 dt 2 pt 6 title 'a3 (independent)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (independent)', \
  $d3 using 1:2:3:4 with yerrorlines lc 1 dt 1 pt 7 title 'cacheblend (similarity)', \
  $d4 using 1:2:3:4 with yerrorlines lc 2 dt 1 pt 7 title 'a3 (similarity)', \
  $d5 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
