$v0 << EOD
0 0.0779107
1 1.23829
2 2.34319
3 5.46308
4 6.39463
5 8.72851
6 9.35261
7 13.5193
8 20.0271
9 20.0505
10 33.875
11 30.8906
12 40.9856
13 45.1643
14 77.0692
15 80.0287
16 154.892
17 81.9418
18 83.9753
19 79.3474
20 108.61
21 83.2523
22 71.7808
23 76.512
24 48.042
25 45.0402
26 101.024
27 123.643
EOD
$v1 << EOD
0 0.0661644
1 0.852971
2 1.51463
3 3.69417
4 4.25181
5 5.96002
6 6.25352
7 9.31248
8 14.687
9 13.4416
10 23.024
11 21.4488
12 28.457
13 31.4643
14 58.532
15 60.5973
16 116.233
17 62.6563
18 64.4984
19 62.3779
20 85.1707
21 64.7905
22 55.6406
23 60.7958
24 37.3138
25 33.6278
26 73.8168
27 91.2221
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'kv_deviation.png'
set title 'nq_open_pool20_synthetic.jsonl.gz: KV deviation by layer' noenhanced
set xlabel 'layer'
set ylabel 'mean KV deviation from full (eq. 7)'
set logscale y
set format y '10^{%L}'
set key outside right
set grid
plot $v0 using 1:2 with linespoints dt 1 title 'reuse (similarity)', \
  $v1 using 1:2 with linespoints dt 1 title 'fusion 0.15 (similarity)'
