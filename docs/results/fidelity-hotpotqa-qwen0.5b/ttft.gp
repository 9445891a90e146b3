$t << EOD
"full" 3e-05 0.001753 4412.17
"reuse" 0.024857 0.00017 275.67
"fusion 0.15" 0.0231845 250.573 960.569
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
