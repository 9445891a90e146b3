$t << EOD
"full" 0.0068265 0.003185 2799.8
"reuse" 0.145377 0.668813 213.833
"cacheblend 0.05" 0.0454485 174.205 322.831
"cacheblend 0.10" 0.0417715 171.947 431.518
"cacheblend 0.15" 0.041462 171.258 530.979
"cacheblend 0.30" 0.041986 167.833 852.93
"a3 0.05" 0.04129 168.965 364.376
"a3 0.10" 0.0425795 174.609 526.962
"a3 0.15" 0.0447295 169.741 667.958
"a3 0.30" 0.0434295 185.212 1149.77
"fusion 0.05" 0.0425515 201.292 381.462
"fusion 0.10" 0.0443755 195.27 552.835
"fusion 0.15" 0.043764 202.111 726.519
"fusion 0.30" 0.0440975 204.12 1196.96
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
