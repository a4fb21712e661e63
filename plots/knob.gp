# knob.gp - a server knob swept (AXIS=workers, backlog): requests/s, RSS and
# server CPU per request against the knob's value, three panels, one line per server.
# Call: gnuplot -e "run='RUN'; servers='a b'; ceiling=''; conditions='...'; xlabel='...'; fmt='png'" plots/knob.gp
# Reads RUN/data/<server>.dat (1 value, 2 req/s, 3-4 min-max, 8 RSS end MB,
# 11 CPU µs/req, 12-13 min-max); writes RUN/knob.<fmt>.

if (!exists("run") || !exists("servers")) exit error "knob.gp: pass run='RUN' and servers='a b ...' with -e"
if (!exists("ceiling"))    ceiling = ""
if (!exists("conditions")) conditions = ""
if (!exists("xlabel"))     xlabel = "knob"
if (!exists("fmt"))        fmt = "png"
all = servers . " " . ceiling
dat(s) = run . "/data/" . s . ".dat"

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
set key outside right top vertical Left reverse noautotitle
set yrange [0:*]
set offsets graph 0.04, graph 0.04, 0, 0   # room for the bars at both ends
set multiplot layout 3,1 title "Sweeping " . xlabel . " (one server start per value; median, min-max bars)" font ",13"

set ylabel "requests per second"
set format y "%.0f"
plot for [i=1:words(all)] dat(word(all, i)) using 1:2 \
         with linespoints lw 2 pt 7 ps 0.7 lc rgb color(i) title word(all, i), \
     for [i=1:words(all)] dat(word(all, i)) using 1:2:3:4 \
         with yerrorbars pt 0 lw 1.2 lc rgb color(i) notitle

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
