# percentiles.gp - latency percentiles (p50, p90, p99) by the swept axis, one colour per server.
# With an open-loop client (vegeta) the x axis is the offered rate: the "hockey stick".
# Call: gnuplot -e "run='RUN'; servers='a b'; ceiling='nginx'; conditions='...'; xlabel='...'; fmt='png'" plots/percentiles.gp
# Reads RUN/data/<server>.dat (1 value, 10 client_bound, 17 p50, 18 p90, 19 p99 ms, medians,
# 22 saturated); writes RUN/percentiles.<fmt>. A client-bound level's p99 gets an open circle: it
# measures the client; a saturated level's (open loop: the achieved rate fell short of the offered)
# an open diamond, as in every chart of a run's levels.

if (!exists("run") || !exists("servers")) exit error "percentiles.gp: pass run='RUN' and servers='a b ...' with -e"
if (!exists("ceiling"))    ceiling = ""
if (!exists("conditions")) conditions = ""
if (!exists("xlabel"))     xlabel = "concurrency (simultaneous clients)"
if (!exists("fmt"))        fmt = "png"
all = servers . " " . ceiling
dat(s) = run . "/data/" . s . ".dat"
# how many client-bound points are there? (legend entry only when > 0)
nbound = 0
do for [s in all] { stats dat(s) using 10 nooutput; nbound = nbound + STATS_sum }
nsaturated = 0
do for [s in all] { stats dat(s) using 22 nooutput; nsaturated = nsaturated + STATS_sum }
bound(y) = column(10) == 1 ? y : NaN            # keep only client-bound points
saturated(y) = column(22) == 1 ? y : NaN        # open loop: the achieved rate fell short of the offered

if (fmt eq "png") { set terminal pngcairo size 1000,600 font "sans,10" noenhanced } \
else { if (fmt eq "svg") { set terminal svg size 1000,600 font "sans,10" noenhanced background "white" } \
else { exit error "percentiles.gp: fmt must be png or svg" } }
if (!exists("out")) out = run           # the lab passes a private folder, then moves the chart in
set output out . "/percentiles." . fmt

colors = "#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f"
color(i) = word(colors, (i - 1) % words(colors) + 1)

set title "Latency percentiles (p50 dotted, p90 dashed, p99 solid; medians of repetitions)" font ",13"
set label 1 conditions at screen 0.5, 0.025 center font ",8"
set bmargin 6
set xlabel xlabel
set ylabel "latency (ms, log scale)"
set logscale y
set xrange [0:*]
set offsets 0, graph 0.03, 0, 0             # the last level off the right border
set grid xtics ytics mytics lt 1 lw 1 lc rgb "#d8d8d8"
# the swept values as the x tics (whole numbers, never 0.5): xticks='1 8 64'
if (exists("xticks") && words(xticks) > 0) { set xtics (); do for [w in xticks] { set xtics add (w w+0) } }
# one level: its point in the middle of the chart, not on the right border
if (exists("xticks") && words(xticks) == 1) { set xrange [0 : 2 * (word(xticks, 1) + 0)] }
set key outside right top vertical Left reverse noautotitle

plot for [i=1:words(all)] dat(word(all, i)) using 1:19 \
         with linespoints lw 2 pt 7 ps 0.7 lc rgb color(i) title word(all, i) . " p99", \
     for [i=1:words(all)] dat(word(all, i)) using 1:18 \
         with linespoints lw 1.5 dt 2 pt 2 ps 0.6 lc rgb color(i) title word(all, i) . " p90", \
     for [i=1:words(all)] dat(word(all, i)) using 1:17 \
         with linespoints lw 1.5 dt 3 pt 1 ps 0.6 lc rgb color(i) title word(all, i) . " p50", \
     for [i=1:words(all)] dat(word(all, i)) using 1:(bound($19)) \
         with points pt 6 ps 2 lw 1.5 lc rgb "black" \
         title (i == 1 && nbound > 0 ? "client-bound (measures the client)" : ""), \
     for [i=1:words(all)] dat(word(all, i)) using 1:(saturated($19)) \
         with points pt 12 ps 2.4 lw 1.5 lc rgb "#7b3294" \
         title (i == 1 && nsaturated > 0 ? "saturated (achieved rate short of the offered)" : "")
