$d0 << EOD
0 0 0 0
0.05 0.0747865 -0.0240547 0.161679
0.1 0.130855 -0.0568708 0.276722
0.15 0.160789 -0.0772339 0.323222
0.3 0.367936 0.0884921 0.603616
EOD
$d1 << EOD
0 0 0 0
0.05 0.0731258 -0.0319093 0.172828
0.1 0.0875636 -0.133652 0.262315
0.15 0.126012 -0.0978085 0.313256
0.3 0.341871 0.0676765 0.590419
EOD
$d2 << EOD
0 0 0 0
0.05 0.0378685 -0.0755364 0.125915
0.1 -6.36972e-06 -0.196629 0.156793
0.15 0.0480889 -0.195924 0.231807
0.3 0.240519 -0.110608 0.507972
EOD
$d3 << EOD
0 0.563067 0.259624 0.776825
0.05 0.556548 0.234646 0.784779
0.1 0.537993 0.216404 0.756934
0.15 0.538786 0.222748 0.734084
0.3 0.591863 0.249231 0.802767
EOD
$d4 << EOD
0 0.563067 0.259624 0.776825
0.05 0.609989 0.292862 0.839724
0.1 0.623005 0.318382 0.848229
0.15 0.662318 0.368292 0.892276
0.3 0.732575 0.425421 0.965514
EOD
$d5 << EOD
0 0.563067 0.259624 0.776825
0.05 0.605195 0.279561 0.810534
0.1 0.579333 0.207787 0.79702
0.15 0.60365 0.245032 0.840381
0.3 0.565196 0.211739 0.824322
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_ll.png'
set title 'musique_train100_hipporag.jsonl: gold-answer log-likelihood recovery (95% CI)' noenhanced
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
