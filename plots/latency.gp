# latency.gp - mean response time by the swept axis (median, min-max bars), one line per server.
# Call: gnuplot -e "run='RUN'; servers='a b'; ceiling='nginx'; conditions='...'; fmt='png'" plots/latency.gp
# Reads RUN/data/<server>.dat (1 value, 5 mean ms, 6-7 min-max, 10 client_bound, 15 disturbed,
# 22 saturated); writes RUN/latency.<fmt>.

# ---- arguments --------------------------------------------------------------
if (!exists("run") || !exists("servers")) exit error "latency.gp: pass run='RUN' and servers='a b ...' with -e"
if (!exists("ceiling"))    ceiling = ""
if (!exists("conditions")) conditions = ""
if (!exists("xlabel"))     xlabel = "concurrency (simultaneous clients)"
if (!exists("fmt"))        fmt = "png"
if (words(servers) < 1)    exit error "latency.gp: servers is empty"
all = servers . " " . ceiling                  # every file drawn (ceiling may be "")
hasceil = words(ceiling) > 0

dat(s) = run . "/data/" . s . ".dat"
# a file is usable when it exists and has at least one numeric row
usable(f) = system(sprintf("grep -qs '^[[:space:]]*[0-9]' '%s' && echo 1 || echo 0", f)) + 0
do for [s in all] { if (!usable(dat(s))) { exit error "latency.gp: missing or empty data file " . dat(s) } }

# how many client-bound points are there? (legend entry only when > 0)
nbound = 0
ndisturbed = 0
do for [s in all] { stats dat(s) using 10 nooutput; nbound = nbound + STATS_sum }
do for [s in all] { stats dat(s) using 15 nooutput; ndisturbed = ndisturbed + STATS_sum }
nsaturated = 0
do for [s in all] { stats dat(s) using 22 nooutput; nsaturated = nsaturated + STATS_sum }

# ---- output -----------------------------------------------------------------
if (fmt eq "png") { set terminal pngcairo size 1000,600 font "sans,10" noenhanced } \
else { if (fmt eq "svg") { set terminal svg size 1000,600 font "sans,10" noenhanced background "white" } \
else { exit error "latency.gp: fmt must be png or svg" } }
if (!exists("out")) out = run           # the lab passes a private folder, then moves the chart in
set output out . "/latency." . fmt

# ---- look -------------------------------------------------------------------
colors = "#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f"
color(i) = word(colors, (i - 1) % words(colors) + 1)

set title "Mean response time (median, min-max bars)" font ",13"
set label 1 conditions at screen 0.5, 0.025 center font ",8"
set bmargin 6
set xlabel xlabel
set ylabel "mean response time (ms)"
set xrange [0:*]
set autoscale xfixmax                          # no jump to the next tic: ...
set yrange [0:*]
set offsets 0, graph 0.03, graph 0.05, 0   # ... a small margin instead
set grid xtics ytics lt 1 lw 1 lc rgb "#d8d8d8"
# the swept values as the x tics (whole numbers, never 0.5): xticks='1 8 64'
if (exists("xticks") && words(xticks) > 0) { set xtics (); do for [w in xticks] { set xtics add (w w+0) } }
# one level: its point in the middle of the chart, not on the right border
if (exists("xticks") && words(xticks) == 1) { set xrange [0 : 2 * (word(xticks, 1) + 0)] }
set key outside right top vertical Left reverse noautotitle

bound(y) = column(10) == 1 ? y : NaN            # keep only client-bound points
disturbed(y) = column(15) == 1 ? y : NaN        # levels flagged steal or host-busy
saturated(y) = column(22) == 1 ? y : NaN        # open loop: the achieved rate fell short of the offered

# ---- plot -------------------------------------------------------------------
plot for [i=1:words(servers)] dat(word(servers, i)) using 1:5 \
         with linespoints lw 2 pt 7 ps 0.7 lc rgb color(i) title word(servers, i), \
     dat(word(all, words(all))) using 1:(hasceil ? $5 : NaN) \
         with linespoints lw 2 dt 2 pt 7 ps 0.5 lc rgb "black" \
         title (hasceil ? ceiling . " (ceiling reference)" : ""), \
     for [i=1:words(all)] dat(word(all, i)) using 1:(bound($5)) \
         with points pt 6 ps 2 lw 1.5 lc rgb "black" \
         title (i == 1 && nbound > 0 ? "client-bound (measures the client)" : ""), \
     for [i=1:words(all)] dat(word(all, i)) using 1:(disturbed($5)) \
         with points pt 8 ps 2.2 lw 1.5 lc rgb "#ff7f0e" \
         title (i == 1 && ndisturbed > 0 ? "host disturbed (steal or other load)" : ""), \
     for [i=1:words(all)] dat(word(all, i)) using 1:(saturated($5)) \
         with points pt 12 ps 2.4 lw 1.5 lc rgb "#7b3294" \
         title (i == 1 && nsaturated > 0 ? "saturated (achieved rate short of the offered)" : "")
