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
0 0.066164
1 0.853117
2 1.51433
3 3.69461
4 4.25247
5 5.96069
6 6.2546
7 9.31435
8 14.6894
9 13.4441
10 23.0288
11 21.4525
12 28.4623
13 31.4709
14 58.5403
15 60.6031
16 116.243
17 62.6629
18 64.5068
19 62.3849
20 85.1841
21 64.8028
22 55.65
23 60.8067
24 37.3195
25 33.6338
26 73.8492
27 91.2589
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
