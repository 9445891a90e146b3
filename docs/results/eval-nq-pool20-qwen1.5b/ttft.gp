$t << EOD
"full" 6.05924 0.0029045 9314.21
"reuse" 6.25648 0.00015 481.972
"cacheblend 0.05" 6.10258 341.942 865.213
"cacheblend 0.10" 6.108 341.942 1297.99
"cacheblend 0.15" 6.10847 341.942 1710.41
"cacheblend 0.30" 6.10822 341.942 2978.98
"a3 0.05" 6.10747 523.336 913.593
"a3 0.10" 6.10617 523.336 1309.8
"a3 0.15" 6.10771 523.336 1752.55
"a3 0.30" 6.10458 523.336 3026.46
"fusion 0.05" 6.10983 418.072 914.21
"fusion 0.10" 6.10654 418.072 1344.47
"fusion 0.15" 6.10655 418.072 1778.99
"fusion 0.30" 6.10422 418.072 3044.44
EOD
set terminal pngcairo size 1000,520 font ',11'
set output 'ttft.png'
set title 'nq_open_pool20_synthetic.jsonl.gz: TTFT by phase (similarity KV)' noenhanced
set ylabel 'median time to first token, ms'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics rotate by -40
set key top right
set grid ytics
plot $t using 2:xtic(1) title 'load KV', '' using 3 title 'select', '' using 4 title 'prefill'
