$t << EOD
"full" 0.00013 0.004572 4019.86
"reuse" 9.77407 0.00015 274.643
"fusion 0.15" 0.0244565 241.259 887.62
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
