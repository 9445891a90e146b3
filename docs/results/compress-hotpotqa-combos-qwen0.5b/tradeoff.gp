set terminal pngcairo size 1000,560 font ',11'
set output 'tradeoff.png'
$d << EOD
12292.0 0.7859 0.3104 1.1437 1.4155 0.8026 3.3951 similarity
6340.0 0.7502 0.2290 1.1139 1.1896 0.6143 2.4952 sim-q8
6166.9 -2.2178 -6.3557 -0.5003 -0.3397 -2.1093 0.3141 sim-a50
3884.6 0.9299 0.5479 1.2828 1.0305 0.3861 2.3540 sim-q4
3501.8 0.7658 0.2025 1.1995 0.8165 -0.1085 2.0838 sim-q4g64
3074.7 0.8012 0.3468 1.1242 1.0885 0.5911 2.4328 sim-q3g64k4
2733.8 0.8120 0.3251 1.1416 0.8879 0.2983 2.0275 sim-q3g64
2683.6 0.4236 -0.1380 0.7953 0.4833 -0.1662 1.2226 sim-q2k4
2306.7 0.0660 -0.7530 0.4665 0.3858 -0.4502 1.7274 sim-q2g64k4
1776.6 -2.2862 -6.4534 -0.5453 -0.2360 -1.8104 0.4009 sim-a50-q4g64
1391.3 -2.2273 -6.2809 -0.5047 -0.2031 -2.0903 0.4408 sim-a50-q3g64
1346.9 -2.7852 -7.4643 -0.9391 -0.4496 -2.5399 0.1474 sim-a50-q2g64k4
EOD
set title 'hotpotqa_dev500_ircot.jsonl: fusion at 0.15 over compressed KV (40 questions, 95% CI)' noenhanced
set xlabel 'stored bytes per chunk token (log scale)'
set ylabel 'normalized quality (0 = reuse, 1 = full)'
set logscale x 2
set grid
set key top left
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 3 lc rgb 'gray'
plot $d using 1:2:3:4 with yerrorbars pt 7 lc 1 title 'gold log-likelihood recovery', \
     $d using 1:2:8 with labels offset 0,1 font ',9' notitle noenhanced, \
     $d using ($1*1.04):5:6:7 with yerrorbars pt 6 lc 3 title 'F1 (normalized)'
