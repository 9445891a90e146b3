$v0 << EOD
0 0.0777039
1 1.45982
2 2.86693
3 6.59267
4 7.99314
5 10.0009
6 10.9858
7 15.4478
8 22.6835
9 23.9247
10 40.8956
11 36.6323
12 51.03
13 56.5008
14 99.2875
15 99.5436
16 207.768
17 103.58
18 105.774
19 107.142
20 139.773
21 106.9
22 92.118
23 98.6971
24 58.9207
25 54.6527
26 131.939
27 157.841
EOD
$v1 << EOD
0 0.0660226
1 1.08979
2 1.99402
3 4.44746
4 5.29988
5 7.0123
6 7.60353
7 11.0547
8 17.2029
9 16.6775
10 28.9606
11 26.5957
12 36.6105
13 40.7148
14 77.268
15 77.5684
16 158.553
17 82.3807
18 83.3119
19 85.8959
20 111.798
21 84.8168
22 73.5425
23 79.3842
24 46.8723
25 41.6887
26 93.298
27 113.115
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
