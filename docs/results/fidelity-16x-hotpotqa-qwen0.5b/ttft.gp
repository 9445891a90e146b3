$t << EOD
"full" 3e-05 0.0013625 1522.87
"reuse" 0.04392 0.0001605 78.3555
"fusion 0.15" 0.0338855 71.9432 285.44
EOD
set terminal pngcairo size 1000,520 font ',11'
set output 'ttft.png'
set title 'hotpotqa_dev500_ircot.jsonl: TTFT by phase (similarity KV)' noenhanced
set ylabel 'median time to first token, ms'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics rotate by -40
set key top right
set grid ytics
plot $t using 2:xtic(1) title 'load KV', '' using 3 title 'select', '' using 4 title 'prefill'
