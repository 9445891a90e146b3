$t << EOD
"full" 3e-05 0.004401 4132.67
"reuse" 0.0457245 0.509691 211.408
"cacheblend 0.05" 0.044856 247.91 373.084
"cacheblend 0.10" 0.044953 249.233 514.643
"cacheblend 0.15" 0.0445635 259.112 684.471
"cacheblend 0.30" 0.043282 256.24 1224.99
"a3 0.05" 0.0453785 255.565 489.15
"a3 0.10" 0.044448 251.947 684.502
"a3 0.15" 0.0448595 253.066 899.674
"a3 0.30" 0.0454625 259.976 1470.22
"fusion 0.05" 0.0448575 197.6 484.441
"fusion 0.10" 0.0451045 195.781 697.986
"fusion 0.15" 0.0443385 192.994 931.067
"fusion 0.30" 0.046061 198.238 1499.83
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
