$t << EOD
"full" 2e-05 0.003825 18201
"reuse" 0.869784 0.00015 598.327
"cacheblend 0.05" 0.078787 659.229 1436.78
"cacheblend 0.10" 0.085337 659.229 2220.45
"cacheblend 0.15" 0.082603 659.229 2957.48
"cacheblend 0.30" 0.079749 659.229 5263.57
"a3 0.05" 0.079928 1118.62 1445.52
"a3 0.10" 0.075142 1118.62 2185.99
"a3 0.15" 0.076734 1118.62 3094.26
"a3 0.30" 0.08097 1118.62 5557.01
"fusion 0.05" 0.078767 528.038 1399.84
"fusion 0.10" 0.07424 528.038 2345.94
"fusion 0.15" 0.076363 528.038 3091.28
"fusion 0.30" 0.079318 528.038 5490.15
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
