$d0 << EOD
0 -0.0651144 -0.189618 0.0348509
0.15 0.0274627 -0.105164 0.141632
EOD
$d1 << EOD
0 0.103438 0.0360548 0.189934
0.15 0.433221 0.287286 0.562538
EOD
$d2 << EOD
0 0 0 0
0.15 0.455945 0.310511 0.607109
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
plot $d0 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-8x)', \
  $d1 using 1:2:3:4 with yerrorlines lc 3 dt 2 pt 6 title 'fusion (sim-r4z)', \
  $d2 using 1:2:3:4 with yerrorlines lc 3 dt 1 pt 7 title 'fusion (similarity)'
