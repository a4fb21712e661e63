# knob.gp - a server knob swept (AXIS=workers, backlog): requests/s, RSS and
# server CPU per request against the knob's value, three panels, one line per server.
# Call: gnuplot -e "run='RUN'; servers='a b'; ceiling=''; conditions='...'; xlabel='...'; fmt='png'" plots/knob.gp
# Reads RUN/data/<server>.dat (1 value, 2 req/s, 3-4 min-max, 8 RSS end MB,
# 10 client_bound, 11 CPU µs/req, 12-13 min-max, 15 disturbed, 20 unranked,
# 21 failing: more than failshare % of a repetition's requests failed, 22 saturated);
# writes RUN/knob.<fmt>. The req/s panel marks unclean points as rps.gp does.

if (!exists("run") || !exists("servers")) exit error "knob.gp: pass run='RUN' and servers='a b ...' with -e"
if (!exists("ceiling"))    ceiling = ""
if (!exists("conditions")) conditions = ""
if (!exists("xlabel"))     xlabel = "knob"
if (!exists("fmt"))        fmt = "png"
if (!exists("failshare")) failshare = ""
all = servers . " " . ceiling
dat(s) = run . "/data/" . s . ".dat"

# how many points of each unclean kind (a legend entry only when > 0)
nbound = 0
ndisturbed = 0
nunranked = 0
nfailing = 0
do for [s in all] { stats dat(s) using 10 nooutput; nbound = nbound + STATS_sum }
do for [s in all] { stats dat(s) using 15 nooutput; ndisturbed = ndisturbed + STATS_sum }
do for [s in all] { stats dat(s) using 20 nooutput; nunranked = nunranked + STATS_sum }
do for [s in all] { stats dat(s) using 21 nooutput; nfailing = nfailing + STATS_sum }
nsaturated = 0
do for [s in all] { stats dat(s) using 22 nooutput; nsaturated = nsaturated + STATS_sum }
bound(y) = column(10) == 1 ? y : NaN
disturbed(y) = column(15) == 1 ? y : NaN
unranked(y) = column(20) == 1 ? y : NaN
failing(y) = column(21) == 1 ? y : NaN
saturated(y) = column(22) == 1 ? y : NaN        # open loop: the achieved rate fell short of the offered
failtitle = (failshare eq "" ? "requests failed" : "over " . failshare . "% of requests failed") \
            . " (not ranked)"

if (fmt eq "png") { set terminal pngcairo size 1000,900 font "sans,10" noenhanced } \
else { if (fmt eq "svg") { set terminal svg size 1000,900 font "sans,10" noenhanced background "white" } \
else { exit error "knob.gp: fmt must be png or svg" } }
if (!exists("out")) out = run           # the lab passes a private folder, then moves the chart in
set output out . "/knob." . fmt

colors = "#1f77b4 #d62728 #2ca02c #ff7f0e #9467bd #8c564b #e377c2 #17becf #bcbd22 #7f7f7f"
color(i) = word(colors, (i - 1) % words(colors) + 1)

set label 1 conditions at screen 0.5, 0.015 center font ",8"
set logscale x 2
set grid xtics ytics lt 1 lw 1 lc rgb "#d8d8d8"
# the swept values as the x tics (whole numbers, never 0.5): xticks='1 8 64'
if (exists("xticks") && words(xticks) > 0) { set xtics (); do for [w in xticks] { set xtics add (w w+0) } }
set key at screen 0.66, graph 1 left top vertical Left reverse noautotitle
# the same plot area in the three panels, whatever each legend holds (the
# first's marks the unclean points: a longer legend)
set lmargin at screen 0.09
set rmargin at screen 0.64
set yrange [0:*]
set offsets graph 0.04, graph 0.04, 0, 0   # room for the bars at both ends
set multiplot layout 3,1 title "Sweeping " . xlabel . " (one server start per value; median, min-max bars)" font ",13"

set ylabel "requests per second"
set format y "%.0f"
plot for [i=1:words(all)] dat(word(all, i)) using 1:2 \
         with linespoints lw 2 pt 7 ps 0.7 lc rgb color(i) title word(all, i), \
     for [i=1:words(all)] dat(word(all, i)) using 1:2:3:4 \
         with yerrorbars pt 0 lw 1.2 lc rgb color(i) notitle, \
     for [i=1:words(all)] dat(word(all, i)) using 1:(failing($2)) \
         with points pt 4 ps 2.2 lw 1.5 lc rgb "#d62728" \
         title (i == 1 && nfailing > 0 ? failtitle : ""), \
     for [i=1:words(all)] dat(word(all, i)) using 1:(bound($2)) \
         with points pt 6 ps 2 lw 1.5 lc rgb "black" \
         title (i == 1 && nbound > 0 ? "client-bound (measures the client)" : ""), \
     for [i=1:words(all)] dat(word(all, i)) using 1:(disturbed($2)) \
         with points pt 8 ps 2.2 lw 1.5 lc rgb "#ff7f0e" \
         title (i == 1 && ndisturbed > 0 ? "host disturbed (steal or other load)" : ""), \
     for [i=1:words(all)] dat(word(all, i)) using 1:(unranked($2)) \
         with points pt 2 ps 2.4 lw 2 lc rgb "#d62728" \
         title (i == 1 && nunranked > 0 ? "not ranked (client stopped early, or answer changed)" : ""), \
     for [i=1:words(all)] dat(word(all, i)) using 1:(saturated($2)) \
         with points pt 12 ps 2.4 lw 1.5 lc rgb "#7b3294" \
         title (i == 1 && nsaturated > 0 ? "saturated (achieved rate short of the offered)" : "")

set ylabel "RSS at end (MB)"
set format y "%g"
plot for [i=1:words(all)] dat(word(all, i)) using 1:8 \
         with linespoints lw 2 pt 7 ps 0.7 lc rgb color(i) title word(all, i)

set ylabel "server CPU µs per request"
set xlabel xlabel
set bmargin 5
plot for [i=1:words(all)] dat(word(all, i)) using 1:11 \
         with linespoints lw 2 pt 7 ps 0.7 lc rgb color(i) title word(all, i), \
     for [i=1:words(all)] dat(word(all, i)) using 1:11:12:13 \
         with yerrorbars pt 0 lw 1.2 lc rgb color(i) notitle
unset multiplot
