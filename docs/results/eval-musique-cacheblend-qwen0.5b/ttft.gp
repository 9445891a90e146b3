$t << EOD
"full" 2e-05 0.005473 17907.8
"reuse" 0.0582915 0.00014 233.514
"cacheblend 0.05" 0.052648 1605.02 826.185
"cacheblend 0.10" 0.050775 1605.02 1459.22
"cacheblend 0.15" 0.0463485 1605.02 2125.05
"cacheblend 0.30" 0.0477505 1605.02 4304.06
"a3 0.05" 0.059178 2212.91 1197.64
"a3 0.10" 0.0476255 2212.91 2077.16
"a3 0.15" 0.047816 2212.91 2918.28
"a3 0.30" 0.051441 2212.91 5457.72
"fusion 0.05" 0.0543955 214.365 1047.84
"fusion 0.10" 0.0458325 214.365 1855.18
"fusion 0.15" 0.046629 214.365 2680.43
"fusion 0.30" 0.053149 214.365 5080.78
EOD
set terminal pngcairo size 1000,520 font ',11'
set output 'ttft.png'
set title 'musique_cacheblend150.jsonl: TTFT by phase (similarity KV)' noenhanced
set ylabel 'median time to first token, ms'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics rotate by -40
set key top right
set grid ytics
plot $t using 2:xtic(1) title 'load KV', '' using 3 title 'select', '' using 4 title 'prefill'
