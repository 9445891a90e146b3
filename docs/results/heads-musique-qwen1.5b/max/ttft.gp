$t << EOD
"full" 2e-05 0.003876 18148.1
"reuse" 20.5931 0.00015 520.828
"fusion 0.15" 0.078057 466.789 2977.34
EOD
set terminal pngcairo size 1000,520 font ',11'
set output 'ttft.png'
set title 'musique_train100_hipporag.jsonl: TTFT by phase (similarity KV)' noenhanced
set ylabel 'median time to first token, ms'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics rotate by -40
set key top right
set grid ytics
plot $t using 2:xtic(1) title 'load KV', '' using 3 title 'select', '' using 4 title 'prefill'
