$t << EOD
"full" 2e-05 0.005709 19009.7
"reuse" 0.051717 3e-05 271.52
"cacheblend 0.05" 0.054461 1589.79 903.794
"cacheblend 0.10" 0.056393 1589.79 1560.65
"cacheblend 0.15" 0.05362 1589.79 2252.16
"cacheblend 0.30" 0.052448 1589.79 4607.13
"a3 0.05" 0.057055 2163.96 1286.71
"a3 0.10" 0.056714 2163.96 2252.2
"a3 0.15" 0.05363 2163.96 3151.87
"a3 0.30" 0.051075 2163.96 5852.44
"fusion 0.05" 0.058267 265.765 1133.32
"fusion 0.10" 0.057115 265.765 2014.75
"fusion 0.15" 0.051516 265.765 2829.26
"fusion 0.30" 0.051085 265.765 5437.1
EOD
set terminal pngcairo size 1000,520 font ',11'
set output 'ttft.png'
set title '2wikimqa_cacheblend_clean102.jsonl: TTFT by phase (similarity KV)' noenhanced
set ylabel 'median time to first token, ms'
set style data histograms
set style histogram rowstacked
set style fill solid 0.85 border -1
set boxwidth 0.7
set xtics rotate by -40
set key top right
set grid ytics
plot $t using 2:xtic(1) title 'load KV', '' using 3 title 'select', '' using 4 title 'prefill'
