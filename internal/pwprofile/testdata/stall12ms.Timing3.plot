set output 'Timing3.svg
set terminal svg
set multiplot
set grid
set title "Clients end date"
set xlabel "audio cycles"
set ylabel "usec"
plot "profiler.log" using 1 title "Audio period" with lines, "profiler.log" using 8 title "steady/31" with lines, "profiler.log" using 16 title "slow/35" with lines
unset multiplot
unset output
