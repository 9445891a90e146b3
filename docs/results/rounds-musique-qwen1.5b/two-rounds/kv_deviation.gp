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
0 0.0660017
1 0.930325
2 1.72573
3 4.11202
4 4.85514
5 6.53012
6 6.99151
7 10.6484
8 16.3096
9 15.7719
10 27.3342
11 25.0996
12 34.963
13 39.095
14 75.6329
15 76.998
16 154.912
17 81.2726
18 82.1554
19 84.5599
20 109.086
21 82.7048
22 72.2646
23 78.0599
24 45.926
25 40.7011
26 91.3472
27 111.039
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
