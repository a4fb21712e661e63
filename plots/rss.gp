# rss.gp - memory per server: end-of-run RSS and peak RSS, and where the memory at the end
# goes (PSS and private memory, from smaps_rollup) as bars.
# Call: gnuplot -e "run='RUN'; conditions='...'; fmt='png'" plots/rss.gp  (servers, ceiling: ignored)
# Reads RUN/data/rss.dat (1 name, 2 rss_end_MB, 3 rss_peak_MB, 4 role, 5 pss_end_MB,
# 6 private_end_MB; 5-6 NaN or absent when not measured); writes RUN/rss.<fmt>.

# ---- arguments --------------------------------------------------------------
if (!exists("run"))        exit error "rss.gp: pass run='RUN' with -e"
if (!exists("conditions")) conditions = ""
if (!exists("fmt"))        fmt = "png"

f = run . "/data/rss.dat"
ok = system(sprintf("grep -qs '^[[:space:]]*[^#[:space:]]' '%s' && echo 1 || echo 0", f)) + 0
if (!ok) exit error "rss.gp: missing or empty data file " . f
isceil(c) = strcol(c) eq "ceiling"                 # ceiling rows are drawn in grey
stats f using 2 name "END" nooutput
stats f using 3 name "PEAK" nooutput
lo = END_min < PEAK_min ? END_min : PEAK_min
stats f using (valid(6) && $6 > 0 ? $6 : END_min) name "PRIV" nooutput
if (exists("PRIV_min")) { lo = PRIV_min < lo ? PRIV_min : lo }
hi = (END_max > PEAK_max ? END_max : PEAK_max) * 2.5     # room for the value labels
if (lo <= 0) exit error "rss.gp: RSS values must be > 0 (log scale)"
lo = 10 ** floor(log10(lo / 2))                    # bars start at a power of ten
stats f using (isceil(4)) name "CEIL" nooutput
nceil = CEIL_sum                                  # ceiling rows: legend entries only if any

# ---- output -----------------------------------------------------------------
if (fmt eq "png") { set terminal pngcairo size 1000,600 font "sans,10" noenhanced } \
else { if (fmt eq "svg") { set terminal svg size 1000,600 font "sans,10" noenhanced background "white" } \
else { exit error "rss.gp: fmt must be png or svg" } }
if (!exists("out")) out = run           # the lab passes a private folder, then moves the chart in
set output out . "/rss." . fmt

# ---- look -------------------------------------------------------------------
set title "Memory per server: RSS, and where it goes (PSS, private)" font ",13"
set label 1 conditions at screen 0.5, 0.025 center font ",8"
set bmargin 8
set ylabel "memory (MB, log scale)"
set logscale y
set yrange [lo:hi]
set ytics ("0.1" 0.1, "0.2" 0.2, "0.5" 0.5, "1" 1, "2" 2, "5" 5, "10" 10, "20" 20, "50" 50, \
           "100" 100, "200" 200, "500" 500, "1000" 1000, "2000" 2000, "5000" 5000, "10000" 10000)
set grid ytics lt 1 lw 1 lc rgb "#d8d8d8"
pad = END_records < 3 ? (3 - END_records) / 2.0 : 0   # keep 1-2 bar groups narrow
set xrange [-0.5 - pad : END_records - 0.5 + pad]
set xtics nomirror scale 0
set boxwidth 0.19
set style fill solid 1.0 noborder
set key at screen 0.5, 0.085 center center horizontal maxrows 1 Left reverse noautotitle
lfont = END_records > 6 ? ",8" : ",9"              # value labels: smaller when crowded

pick(v, want) = isceil(4) == want ? v : NaN
col(c) = valid(c) ? column(c) : NaN               # PSS, private: absent in older runs
name(c) = isceil(4) ? strcol(c) . "\n(ceiling ref.)" : strcol(c)
mb(v) = v < 100 ? sprintf("%.1f", v) : sprintf("%.0f", v)

# ---- plot -------------------------------------------------------------------
plot f using 0:(NaN):xtic(name(1)) with points, \
     f using ($0 - 0.3):(pick($2, 0)) with boxes lc rgb "#1f77b4" title "RSS end of run (published measure)", \
     f using ($0 - 0.1):(pick($3, 0)) with boxes lc rgb "#a6c8e6" title "RSS peak", \
     f using ($0 + 0.1):(pick(col(5), 0)) with boxes lc rgb "#2ca02c" title "PSS end", \
     f using ($0 + 0.3):(pick(col(6), 0)) with boxes lc rgb "#ff7f0e" title "private end", \
     f using ($0 - 0.3):(pick($2, 1)) with boxes lc rgb "#555555" title (nceil > 0 ? "ceiling ref.: RSS end" : ""), \
     f using ($0 - 0.1):(pick($3, 1)) with boxes lc rgb "#bbbbbb" title (nceil > 0 ? "ceiling ref.: RSS peak" : ""), \
     f using ($0 + 0.1):(pick(col(5), 1)) with boxes lc rgb "#8fbf8f" notitle, \
     f using ($0 + 0.3):(pick(col(6), 1)) with boxes lc rgb "#d9b38c" notitle, \
     f using ($0 - 0.3):2:(mb($2)) with labels offset 0, 0.8 font lfont, \
     f using ($0 + 0.3):(col(6)):(mb(col(6))) with labels offset 0, 0.8 font lfont tc rgb "#555555"
