$t << EOD
"full" 2e-05 0.005868 28407
"reuse" 17.175 0.00014 376.793
"cacheblend 0.05" 0.066619 1267.47 1429.62
"cacheblend 0.10" 0.066219 1267.47 2520.77
"cacheblend 0.15" 0.06677 1267.47 3732.95
"cacheblend 0.30" 0.077045 1267.47 6897.78
"a3 0.05" 0.076634 2597.21 1875.15
"a3 0.10" 0.072358 2597.21 2799.39
"a3 0.15" 0.062272 2597.21 4211.32
"a3 0.30" 0.06068 2597.21 7638.21
"fusion 0.05" 0.050194 320.4 1718.44
"fusion 0.10" 0.055172 320.4 2810.6
"fusion 0.15" 0.062734 320.4 3920.08
"fusion 0.30" 0.056655 320.4 7251.53
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
