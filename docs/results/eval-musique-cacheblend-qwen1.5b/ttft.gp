$t << EOD
"full" 2e-05 0.0056135 27219.6
"reuse" 15.2989 0.00014 352.157
"cacheblend 0.05" 0.059514 1236.71 1405.1
"cacheblend 0.10" 0.0640355 1236.71 2498.38
"cacheblend 0.15" 0.0609955 1236.71 3589.12
"cacheblend 0.30" 0.0641555 1236.71 6702.1
"a3 0.05" 0.06027 2533.55 1813.12
"a3 0.10" 0.061031 2533.55 2679.28
"a3 0.15" 0.0591025 2533.55 4067.16
"a3 0.30" 0.0530645 2533.55 7659.54
"fusion 0.05" 0.0518425 301.444 1663.7
"fusion 0.10" 0.051206 301.444 2856
"fusion 0.15" 0.056309 301.444 3962.36
"fusion 0.30" 0.05016 301.444 7347.08
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
