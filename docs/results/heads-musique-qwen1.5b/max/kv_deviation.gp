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
0 0.0660924
1 0.902325
2 1.72091
3 4.21007
4 5.00279
5 6.63957
6 7.02365
7 10.5153
8 16.3014
9 15.7995
10 27.8127
11 25.5104
12 35.8493
13 39.6646
14 77.1996
15 78.1077
16 159.034
17 82.6054
18 83.3194
19 86.1319
20 110.904
21 83.7973
22 73.0774
23 78.8231
24 46.5354
25 41.3629
26 93.2265
27 113.094
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
