# history.gp - one server across runs: peak req/s, CPU µs per request, RSS and instructions per
# request, one panel each (only the figures some run measured), numbered points in run order.
# A blank line in the data file (conditions changed, or a run flagged at its peak
# level) breaks every line there; a flagged run is drawn ringed in red, alone.
# Call: gnuplot -e "dat='DIR/x.dat'; svg='DIR/x.svg'; server='x'; runs=5; panels='2 3 4'" plots/history.gp
# Reads dat (1 n, 2 peak_rps, 3 cpu_us_per_req, 4 rss_mb, 5 instructions_per_req,
# 6 flagged 0/1; ? unknown);
# writes svg.

if (!exists("dat") || !exists("svg")) exit error "history.gp: pass dat='FILE' and svg='FILE' with -e"
if (!exists("server")) server = ""
if (!exists("runs"))   runs = 1
if (!exists("panels")) panels = "2 3 4 5"
if (words(panels) < 1) exit error "history.gp: panels is empty"
ok = system(sprintf("grep -qs '^[[:space:]]*[0-9]' '%s' && echo 1 || echo 0", dat)) + 0
if (!ok) exit error "history.gp: missing or empty data file " . dat

titles = "x peak_req/s CPU_µs/request RSS_MB_at_peak instructions/request"
title(c) = system(sprintf("echo '%s' | tr '_' ' '", word(titles, c)))
n = words(panels)

set terminal svg size 1000,(170 * n + 80) font "sans,10" noenhanced background "white"
set output svg
set datafile missing "?"
set multiplot layout n,1 title sprintf("%s across runs (a break: the conditions changed; ringed in red: flagged, not a trend point)", server) font ",13"
set grid ytics lt 1 lw 1 lc rgb "#d8d8d8"
set xrange [0.5 : runs + 0.5]
set xtics 1
set key off
set offsets 0, 0, graph 0.15, graph 0.15
do for [i = 1 : n] {
    c = word(panels, i) + 0
    set ylabel title(c)
    if (i == n) { set xlabel "run (numbered as in the list below the chart)" } else { unset xlabel }
    plot dat using 1:c with linespoints lw 2 pt 7 ps 0.8 lc rgb "#1f77b4", \
         dat using 1:(column(6) > 0 ? column(c) : 1/0) with points pt 4 ps 1.8 lw 2 lc rgb "#d62728", \
         dat using 1:c:(sprintf("%d", $1)) with labels offset 0,0.8 font ",8"
}
unset multiplot
