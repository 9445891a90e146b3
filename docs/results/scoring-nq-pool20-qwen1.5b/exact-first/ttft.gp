$t << EOD
"full" 7.27502 0.002659 16121.6
"reuse" 29.1726 0.000151 569.801
"fusion 0.15" 7.31504 653.041 2909.1
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
