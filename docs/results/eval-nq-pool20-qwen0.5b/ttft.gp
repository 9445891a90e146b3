$t << EOD
"full" 8.94243 0.0029845 4341.23
"reuse" 8.96923 3e-05 255.772
"cacheblend 0.05" 8.96639 202.584 467.271
"cacheblend 0.10" 8.9664 202.584 672.908
"cacheblend 0.15" 8.9663 202.584 852.028
"cacheblend 0.30" 8.96697 202.584 1430.97
"a3 0.05" 8.96714 269.627 499.261
"a3 0.10" 8.96667 269.627 697.116
"a3 0.15" 8.96672 269.627 922.387
"a3 0.30" 8.96662 269.627 1537.18
"fusion 0.05" 8.96724 236.097 490.741
"fusion 0.10" 8.96677 236.097 677.29
"fusion 0.15" 8.96672 236.097 886.648
"fusion 0.30" 8.96699 236.097 1492.31
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
