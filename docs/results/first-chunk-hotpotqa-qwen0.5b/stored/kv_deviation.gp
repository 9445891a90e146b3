$v0 << EOD
0 0.00805845
1 0.848203
2 0.329583
3 1.68959
4 5.40555
5 7.34185
6 5.01608
7 4.80644
8 5.93908
9 13.2507
10 25.2047
11 44.0027
12 49.7023
13 89.709
14 64.7848
15 67.8005
16 101.787
17 28.0842
18 37.4001
19 49.75
20 44.4658
21 50.8028
22 57.1222
23 58.0313
EOD
$v1 << EOD
0 0.00688786
1 0.746474
2 0.265279
3 1.27562
4 4.18376
5 5.81723
6 3.87596
7 3.69166
8 4.61595
9 10.4351
10 19.5354
11 35.9272
12 41.8044
13 75.276
14 54.8665
15 57.1821
16 87.7151
17 24.0956
18 31.9449
19 42.6775
20 38.5565
21 44.0394
22 49.7915
23 50.3809
EOD
set terminal pngcairo size 900,560 font ',11'
set output 'kv_deviation.png'
set title 'hotpotqa_dev500_ircot.jsonl: KV deviation by layer' noenhanced
set xlabel 'layer'
set ylabel 'mean KV deviation from full (eq. 7)'
set logscale y
set format y '10^{%L}'
set key outside right
set grid
plot $v0 using 1:2 with linespoints dt 1 title 'reuse (similarity)', \
  $v1 using 1:2 with linespoints dt 1 title 'fusion 0.15 (similarity)'
