$t << EOD
"full" 2e-05 0.002183 11367.7
"reuse" 0.0449465 3e-05 547.206
"cacheblend 0.05" 0.0414715 450.927 1036.91
"cacheblend 0.10" 0.0430385 450.927 1545.34
"cacheblend 0.15" 0.0430185 450.927 2041.55
"cacheblend 0.30" 0.046344 450.927 3534.86
"a3 0.05" 0.047681 534.883 1080.84
"a3 0.10" 0.0481615 534.883 1583.04
"a3 0.15" 0.0449615 534.883 2129.39
"a3 0.30" 0.0461635 534.883 3729.25
"fusion 0.05" 0.048597 524.49 1054.9
"fusion 0.10" 0.0429835 524.49 1582.17
"fusion 0.15" 0.043259 524.49 2095.01
"fusion 0.30" 0.045107 524.49 3650.94
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
