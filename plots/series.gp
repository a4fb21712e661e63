# series.gp - one server's per-second series over its measured levels, in the
# order they ran: the client's req/s (where the client gives one), the server's
# CPU (% of one core) and RSS, so that GC and JIT pauses show.
# Call: gnuplot -e "run='RUN'; server='NAME'; client='vegeta'; has_rps=1; has_server=1; conditions='...'; fmt='png'" plots/series.gp
# Reads RUN/data/series-NAME.dat (1 t_s, 2 rps, 3 server_cpu_pct, 4 rss_MB; NaN: no
# figure; a blank line between levels; each second drawn at its middle); writes RUN/series-NAME.<fmt>.

# ---- arguments --------------------------------------------------------------
if (!exists("run"))        exit error "series.gp: pass run='RUN' with -e"
if (!exists("server"))     exit error "series.gp: pass server='NAME' with -e"
if (!exists("client"))     client = "the client"
if (!exists("has_rps"))    has_rps = 0
if (!exists("has_server")) has_server = 1
if (!exists("conditions")) conditions = ""
if (!exists("fmt"))        fmt = "png"

f = run . "/data/series-" . server . ".dat"
ok = system(sprintf("grep -qs '^[[:space:]]*[^#[:space:]]' '%s' && echo 1 || echo 0", f)) + 0
if (!ok) exit error "series.gp: missing or empty data file " . f

# ---- output -----------------------------------------------------------------
if (fmt eq "png") { set terminal pngcairo size 1000,600 font "sans,10" noenhanced } \
else { if (fmt eq "svg") { set terminal svg size 1000,600 font "sans,10" noenhanced background "white" } \
else { exit error "series.gp: fmt must be png or svg" } }
if (!exists("out")) out = run           # the lab passes a private folder, then moves the chart in
set output out . "/series-" . server . "." . fmt

# ---- look -------------------------------------------------------------------
set grid ytics lt 1 lw 1 lc rgb "#d8d8d8"
set key top right
set yrange [0:*]
set xrange [0:*]
set offsets 0, 0, graph 0.15, 0                    # room above the curve for the key
set style data linespoints
set pointsize 0.5
set multiplot layout 3,1 margins 0.1, 0.97, 0.13, 0.92 spacing 0, 0.05 \
    title server . ": per second over the measured levels (a gap between levels)" font ",13"

set format x ""
set ylabel "req/s"
if (has_rps) {
    plot f using ($1 + 0.5):2 lw 1.5 pt 7 lc rgb "#1f77b4" title client . " responses/s"
} else {
    set label 2 "req/s per second: not available from " . client at graph 0.5, 0.5 center
    set yrange [0:1]
    unset ytics
    plot f using ($1 + 0.5):(0) with lines lc rgb "#ffffff" notitle
    unset label 2
    set ytics
    set yrange [0:*]
}

set ylabel "server CPU (% of a core)"
if (has_server) {
    plot f using ($1 + 0.5):3 lw 1.5 pt 7 lc rgb "#d62728" title "server CPU"
} else {
    set label 2 "server CPU per second: not sampled (a server on another host)" at graph 0.5, 0.5 center
    set yrange [0:1]
    unset ytics
    plot f using ($1 + 0.5):(0) with lines lc rgb "#ffffff" notitle
    unset label 2
    set ytics
    set yrange [0:*]
}

set format x "%g"
set xlabel "seconds of load (levels in the order they ran)"
set label 1 conditions at screen 0.5, 0.02 center font ",8"
set ylabel "server RSS (MB)"
if (has_server) {
    plot f using ($1 + 0.5):4 lw 1.5 pt 7 lc rgb "#2ca02c" title "server RSS"
} else {
    set label 2 "server RSS per second: not sampled (a server on another host)" at graph 0.5, 0.5 center
    set yrange [0:1]
    unset ytics
    plot f using ($1 + 0.5):(0) with lines lc rgb "#ffffff" notitle
}
unset multiplot
