$t << EOD
"full" 3e-05 0.004377 7209.18
"reuse" 0.034701 3.1e-05 322.583
"cacheblend 0.05" 0.031016 573.369 634.956
"cacheblend 0.10" 0.031086 573.369 908.037
"cacheblend 0.15" 0.031096 573.369 1164.85
"cacheblend 0.30" 0.031256 573.369 2010.54
"a3 0.05" 0.031947 652.88 716.621
"a3 0.10" 0.031777 652.88 1093.55
"a3 0.15" 0.031096 652.88 1420.31
"a3 0.30" 0.032498 652.88 2388.71
"fusion 0.05" 0.03384 308.926 719.495
"fusion 0.10" 0.031877 308.926 1014.19
"fusion 0.15" 0.031517 308.926 1358.72
"fusion 0.30" 0.031336 308.926 2339.92
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
