$t << EOD
"full" 11.0192 0.004373 8416.96
"reuse" 13.5054 0.00016 396.615
"cacheblend 0.15" 11.0668 377.282 1834.45
"a3 0.15" 11.0714 456.507 1774.61
"fusion 0.15" 11.0713 371.836 1762.91
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
