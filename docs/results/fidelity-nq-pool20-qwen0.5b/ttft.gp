$t << EOD
"full" 11.2223 0.001362 3756.12
"reuse" 11.2512 0.00017 240.475
"fusion 0.15" 11.2483 212.703 802.254
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
