$v0 << EOD
0 0.0779107
1 1.35664
2 2.5019
3 5.61523
4 6.60835
5 8.85844
6 9.51958
7 13.3509
8 20.1573
9 20.0053
10 33.7179
11 30.7926
12 40.6493
13 45.0335
14 76.1168
15 78.4069
16 154.467
17 81.0495
18 83.1172
19 78.7889
20 108.788
21 83.5295
22 71.4366
23 76.2313
24 48.0967
25 45.2477
26 101.376
27 123.609
EOD
$v1 << EOD
0 0.066165
1 0.941561
2 1.65946
3 3.84342
4 4.45876
5 6.11579
6 6.44401
7 9.30386
8 14.9336
9 13.5613
10 23.2176
11 21.5853
12 28.3975
13 31.596
14 57.7965
15 59.4965
16 116.121
17 62.238
18 64.0208
19 62.0703
20 85.3556
21 65.0767
22 55.4219
23 60.5516
24 37.4225
25 33.8521
26 74.3585
27 91.4803
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
