$d0 << EOD
0 0 0 0
0.05 0.140992 0.0802865 0.206656
0.1 0.222292 0.130705 0.313654
0.15 0.315077 0.20872 0.422433
0.3 0.457001 0.332807 0.569701
EOD
$d1 << EOD
0 0 0 0
0.05 0.103948 0.0553585 0.156537
0.1 0.171065 0.104345 0.245512
0.15 0.242142 0.162087 0.327989
0.3 0.357565 0.273168 0.450737
EOD
$d2 << EOD
0 0 0 0
0.05 0.249132 0.178695 0.327916
0.1 0.418864 0.334128 0.51273
0.15 0.509214 0.396845 0.618863
0.3 0.663389 0.539774 0.790691
EOD
$d3 << EOD
0 0.260922 0.0395092 0.437271
0.05 0.404306 0.214104 0.550922
0.1 0.429062 0.224627 0.583576
0.15 0.516126 0.312264 0.674826
0.3 0.757882 0.628339 0.869663
EOD
$d4 << EOD
0 0.260922 0.0395092 0.437271
0.05 0.346086 0.153383 0.506932
0.1 0.419288 0.242814 0.577088
0.15 0.438002 0.262534 0.583935
0.3 0.505465 0.354769 0.629869
EOD
$d5 << EOD
0 0.260922 0.0395092 0.437271
0.05 0.506511 0.349709 0.643584
0.1 0.534342 0.363295 0.680762
0.15 0.617611 0.455091 0.762126
0.3 0.671225 0.481896 0.808153
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'norm_ll.png'
set title 'nq_open_pool20_synthetic.jsonl.gz: gold-answer log-likelihood recovery (95% CI)' noenhanced
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
