$v0 << EOD
0 0.0777039
1 1.24882
2 2.5472
3 6.2431
4 7.54807
5 9.53123
6 10.3409
7 15.0994
8 21.7854
9 22.9782
10 39.3702
11 35.2024
12 49.4902
13 54.9527
14 97.7755
15 99.5448
16 204.733
17 103.072
18 105.039
19 106.111
20 137.093
21 104.725
22 91.1479
23 97.5177
24 58.1441
25 53.8234
26 130.407
27 156.334
EOD
$v1 << EOD
0 0.0660223
1 0.929554
2 1.72599
3 4.13253
4 4.88127
5 6.56444
6 7.00764
7 10.6465
8 16.323
9 15.7918
10 27.4227
11 25.1577
12 35.06
13 39.1499
14 75.6852
15 77.073
16 155.063
17 81.3938
18 82.2148
19 84.506
20 109.13
21 82.7124
22 72.2985
23 78.0122
24 45.9378
25 40.7523
26 91.3224
27 111.053
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'kv_deviation.png'
set title 'musique_train100_hipporag.jsonl: KV deviation by layer' noenhanced
set xlabel 'layer'
set ylabel 'mean KV deviation from full (eq. 7)'
set logscale y
set format y '10^{%L}'
set key outside right
set grid
plot $v0 using 1:2 with linespoints dt 1 title 'reuse (similarity)', \
  $v1 using 1:2 with linespoints dt 1 title 'fusion 0.15 (similarity)'
