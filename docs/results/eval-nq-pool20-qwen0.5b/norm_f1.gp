$d0 << EOD
0 0 0 0
0.05 -0.0227782 -0.135049 0.0719709
0.1 0.0348575 -0.0982907 0.176845
0.15 0.00638688 -0.133298 0.138073
0.3 0.114683 -0.0298636 0.255608
EOD
$d1 << EOD
0 0 0 0
0.05 -0.0587437 -0.157845 -0.00116223
0.1 -0.0192815 -0.136391 0.0897663
0.15 -0.0192815 -0.136391 0.0897663
0.3 -0.00220697 -0.166302 0.149131
EOD
$d2 << EOD
0 0 0 0
0.05 0.0110353 -0.0964987 0.114458
0.1 0.153026 -0.00929679 0.337247
0.15 0.22585 0.0306573 0.414903
0.3 0.47244 0.256691 0.698956
EOD
$d3 << EOD
0 0.0990109 -0.0889862 0.269861
0.05 0.250614 0.00146944 0.48081
0.1 0.493381 0.302743 0.687353
0.15 0.555722 0.351687 0.759019
0.3 0.748737 0.544314 0.979528
EOD
$d4 << EOD
0 0.0990109 -0.0889862 0.269861
0.05 0.158248 -0.0351293 0.334214
0.1 0.238626 0.0446418 0.432866
0.15 0.263148 0.0514217 0.451558
0.3 0.338675 0.121929 0.538809
EOD
$d5 << EOD
0 0.0990109 -0.0889862 0.269861
0.05 0.163643 -0.0448419 0.336887
0.1 0.260985 0.056023 0.44995
0.15 0.343471 0.161658 0.517497
0.3 0.518121 0.286329 0.704706
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
