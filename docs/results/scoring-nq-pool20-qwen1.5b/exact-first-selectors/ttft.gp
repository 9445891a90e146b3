$t << EOD
"full" 8.32483 0.002674 12825.6
"reuse" 38.8858 0.0001505 874.745
"cacheblend 0.15" 8.35203 602.895 2700.55
"a3 0.15" 8.35254 671.196 2774.19
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
