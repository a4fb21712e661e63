# compare.gp - requests/s of two runs overlaid: per server, run A solid and run B dashed in the same colour,
# median of the repetitions with min-max bars.
# Call: gnuplot -e "dir='OUT'; servers='a b'; label_a='A-id'; label_b='B-id'; cond_a='A: ...'; cond_b='B: ...'; fmt='png'" plots/compare.gp
# Reads OUT/data/a-<server>.dat and OUT/data/b-<server>.dat (1 value, 2 req/s, 3-4 min-max, 5 client_bound,
# 6 host_busy: a repetition measured beside other load, a point the gate refuses);
# writes OUT/compare.<fmt>.

# ---- arguments --------------------------------------------------------------
if (!exists("dir") || !exists("servers")) exit error "compare.gp: pass dir='OUT' and servers='a b ...' with -e"
if (!exists("label_a")) label_a = "A"
if (!exists("label_b")) label_b = "B"
if (!exists("cond_a"))  cond_a = ""
if (!exists("cond_b"))  cond_b = ""
if (!exists("xlabel"))  xlabel = "concurrency (simultaneous clients)"
if (!exists("fmt"))     fmt = "png"
if (words(servers) < 1) exit error "compare.gp: servers is empty"

dat(side, s) = dir . "/data/" . side . "-" . s . ".dat"
usable(f) = system(sprintf("grep -qs '^[[:space:]]*[0-9]' '%s' && echo 1 || echo 0", f)) + 0
do for [s in servers] {
    if (!usable(dat("a", s))) { exit error "compare.gp: missing or empty data file " . dat("a", s) }
    if (!usable(dat("b", s))) { exit error "compare.gp: missing or empty data file " . dat("b", s) }
}

nbound = 0
nbusy = 0
xmax = 0
do for [s in servers] {
    stats dat("a", s) using 1 nooutput; xmax = STATS_max > xmax ? STATS_max : xmax
    stats dat("b", s) using 1 nooutput; xmax = STATS_max > xmax ? STATS_max : xmax
    stats dat("a", s) using 5 nooutput; nbound = nbound + STATS_sum
    stats dat("b", s) using 5 nooutput; nbound = nbound + STATS_sum
    stats dat("a", s) using 6 nooutput; nbusy = nbusy + STATS_sum
    stats dat("b", s) using 6 nooutput; nbusy = nbusy + STATS_sum
}

# ---- output -----------------------------------------------------------------
if (fmt eq "png") { set terminal pngcairo size 1000,600 font "sans,10" noenhanced } \
else { if (fmt eq "svg") { set terminal svg size 1000,600 font "sans,10" noenhanced background "white" } \
else { exit error "compare.gp: fmt must be png or svg" } }
set output dir . "/compare." . fmt

# ---- look -------------------------------------------------------------------
colors = "#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f"
color(i) = word(colors, (i - 1) % words(colors) + 1)

# the title is centred on the chart, not over the plot area (which the legend
# narrows), a run a line: two long run ids on one line ran off the left edge
set label 3 "Requests per second (median of the repetitions, min-max bars)\n" . \
    "A = " . label_a . " (solid)\nB = " . label_b . " (dashed)" \
    at screen 0.5, screen 0.975 center font ",12"
set tmargin 5
set label 1 cond_a at screen 0.5, 0.045 center font ",8"
set label 2 cond_b at screen 0.5, 0.018 center font ",8"
set bmargin 7
set xlabel xlabel
set ylabel "requests per second"
set xrange [0:*]
set autoscale xfixmax
set yrange [0:*]
set offsets 0, graph 0.03, graph 0.05, 0
set format y "%.0f"
set grid xtics ytics lt 1 lw 1 lc rgb "#d8d8d8"
# the swept values as the x tics (whole numbers, never 0.5): xticks='1 8 64'
if (exists("xticks") && words(xticks) > 0) { set xtics (); do for [w in xticks] { set xtics add (w w+0) } }
# one level: its point in the middle of the chart, not on the right border
if (exists("xticks") && words(xticks) == 1) { set xrange [0 : 2 * (word(xticks, 1) + 0)] }
set key outside right top vertical Left reverse noautotitle

bound(y) = column(5) == 1 ? y : NaN             # keep only client-bound points
busy(y) = column(6) == 1 ? y : NaN              # keep only host-busy points
dx = 0.006 * xmax                               # B's bars a little to the right of A's

# ---- plot -------------------------------------------------------------------
# bars first, with the same point as their line: the points then sit on top of them
plot for [i=1:words(servers)] dat("a", word(servers, i)) using 1:2:3:4 \
         with yerrorbars pt 7 lw 1.2 dt 1 lc rgb color(i) notitle, \
     for [i=1:words(servers)] dat("b", word(servers, i)) using ($1 + dx):2:3:4 \
         with yerrorbars pt 9 lw 1.2 dt 2 lc rgb color(i) notitle, \
     for [i=1:words(servers)] dat("a", word(servers, i)) using 1:2 \
         with linespoints lw 2 dt 1 pt 7 ps 1.0 lc rgb color(i) \
         title word(servers, i) . " (A)", \
     for [i=1:words(servers)] dat("b", word(servers, i)) using ($1 + dx):2 \
         with linespoints lw 2 dt 2 pt 9 ps 1.0 lc rgb color(i) \
         title word(servers, i) . " (B)", \
     for [i=1:words(servers)] dat("a", word(servers, i)) using 1:(bound($2)) \
         with points pt 6 ps 2.2 lw 1.5 lc rgb "black" \
         title (i == 1 && nbound > 0 ? "client-bound (measures the client)" : ""), \
     for [i=1:words(servers)] dat("b", word(servers, i)) using ($1 + dx):(bound($2)) \
         with points pt 6 ps 2.2 lw 1.5 lc rgb "black" notitle, \
     for [i=1:words(servers)] dat("a", word(servers, i)) using 1:(busy($2)) \
         with points pt 4 ps 2.6 lw 1.5 lc rgb "#f79009" \
         title (i == 1 && nbusy > 0 ? "host-busy (refused by the gate)" : ""), \
     for [i=1:words(servers)] dat("b", word(servers, i)) using ($1 + dx):(busy($2)) \
         with points pt 4 ps 2.6 lw 1.5 lc rgb "#f79009" notitle
