$t << EOD
"full" 5.74172 0.001848 3025.33
"reuse" 5.78354 3e-05 187.284
"cacheblend 0.15" 5.76482 140.288 667.081
"a3 0.15" 5.76466 182.871 710.416
"fusion 0.15" 5.76482 180.786 709.565
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
