$t << EOD
"full" 3e-05 0.0011415 4634.19
"reuse" 0.0494235 0.00018 272.304
"fusion 0.15" 0.0445415 233.231 904.274
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
