$v0 << EOD
0 0.00730328
1 0.865784
2 0.335484
3 1.69097
4 5.45693
5 7.41868
6 5.09963
7 4.88775
8 6.05091
9 13.5119
10 25.5952
11 44.669
12 50.377
13 90.8513
14 65.7433
15 68.6385
16 103.335
17 28.5416
18 37.8961
19 50.3605
20 45.2044
21 51.627
22 58.1579
23 58.7854
EOD
$v1 << EOD
0 0.00613047
1 0.763095
2 0.270444
3 1.28061
4 4.23405
5 5.88376
6 3.94778
7 3.75938
8 4.70975
9 10.6525
10 19.8501
11 36.4809
12 42.3892
13 76.295
14 55.729
15 57.947
16 89.164
17 24.4959
18 32.394
19 43.2456
20 39.2355
21 44.8022
22 50.7515
23 51.0974
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
