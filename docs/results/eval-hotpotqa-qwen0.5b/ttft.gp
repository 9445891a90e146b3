$t << EOD
"full" 2.1e-05 0.0029695 3925.91
"reuse" 0.0210865 3e-05 291.844
"cacheblend 0.05" 0.019745 315.807 460.469
"cacheblend 0.10" 0.0210165 315.807 609.344
"cacheblend 0.15" 0.0204655 315.807 762.053
"cacheblend 0.30" 0.021151 315.807 1264.34
"a3 0.05" 0.021421 351.291 503.315
"a3 0.10" 0.021006 351.291 702.476
"a3 0.15" 0.0222725 351.291 882.445
"a3 0.30" 0.021502 351.291 1405.19
"fusion 0.05" 0.021056 284.397 507.736
"fusion 0.10" 0.020906 284.397 703.297
"fusion 0.15" 0.021507 284.397 858.669
"fusion 0.30" 0.021988 284.397 1405.69
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
