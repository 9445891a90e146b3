$d0 << EOD
0 0 0 0
0.05 0.136294 0.0408472 0.255403
0.1 0.129656 0.0116886 0.262944
0.15 0.204491 0.0839317 0.349101
0.3 0.365387 0.196849 0.539712
EOD
$d1 << EOD
0 0 0 0
0.05 0.0477599 0.00315402 0.118306
0.1 0.0810957 -0.0152198 0.186871
0.15 0.114864 -0.00169794 0.224524
0.3 0.181115 0.0506345 0.315001
EOD
$d2 << EOD
0 0 0 0
0.05 0.179811 0.0734045 0.31113
0.1 0.337896 0.202946 0.502236
0.15 0.405361 0.252 0.558922
0.3 0.598196 0.435066 0.759273
EOD
$d3 << EOD
0 0.105448 -0.0583425 0.251535
0.05 0.165227 -0.0261813 0.325631
0.1 0.287238 0.116759 0.454797
0.15 0.381928 0.17415 0.559682
0.3 0.759187 0.61033 0.882198
EOD
$d4 << EOD
0 0.105448 -0.0583425 0.251535
0.05 0.132001 -0.054032 0.297139
0.1 0.224865 0.0295019 0.404168
0.15 0.221955 0.035533 0.396155
0.3 0.251238 0.0644456 0.416781
EOD
$d5 << EOD
0 0.105448 -0.0583425 0.251535
0.05 0.304236 0.129054 0.459609
0.1 0.309972 0.122161 0.496127
0.15 0.464457 0.285385 0.626852
0.3 0.638248 0.479515 0.788084
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_f1.png'
set title 'nq_open_pool20_synthetic.jsonl.gz: normalized F1 (95% CI)' noenhanced
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
