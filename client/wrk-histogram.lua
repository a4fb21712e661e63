-- wrk's whole latency distribution, appended by the lab to wrk-report.lua (its
-- run copy wrk-histogram.lua) for the levels that several client hosts share:
-- their percentiles are those of the hosts' distributions merged
-- (lab/record/histogram.py). Only done() is defined, as in wrk-report.lua: no
-- request(), response() or delay() hook, so wrk calls no Lua per request and
-- this costs the level nothing while it runs. done() adds one line:
-- "wrk-histogram {complete, values, counts}", each latency (whole
-- microseconds, wrk's own resolution) that some response took and how many
-- took it, rising.
--
-- wrk hands the i-th distinct latency out as latency(i), and finds it by
-- counting from the lowest each time, so reading them all costs the product
-- of their number and their spread. That time is in the client's run, past wrk's
-- own clock, and the lab flags a client whose run outlasts its own clock by
-- more than a share of the level (client-stalled): so a CPU budget, half of
-- that (HISTOGRAM_BUDGET, written above this by the lab from its
-- thresholds), bounds it. Past it, the line says "complete": false and why,
-- and the lab keeps the bound for that level.

local report_done = done
local limits = HISTOGRAM_BUDGET or {share = 0.05, min_s = 0.5}

function done(summary, latency, requests)
  report_done(summary, latency, requests)
  local BUDGET_S = math.max(limits.share * summary.duration / 1e6, limits.min_s)
  local t0 = os.clock()
  local n = #latency
  local values, counts = {}, {}
  for i = 1, n do
    local v, c = latency(i)
    values[i] = string.format("%d", v)
    counts[i] = string.format("%d", c)
    if i % 256 == 0 and os.clock() - t0 > BUDGET_S then
      io.write("wrk-histogram ", string.format(
        '{"complete":false,"why":"reading its %d latencies took over %.1f s of CPU; ' ..
        'read %d"}', n, BUDGET_S, i), "\n")
      return
    end
  end
  io.write("wrk-histogram ", '{"complete":true,"values":[', table.concat(values, ","),
           '],"counts":[', table.concat(counts, ","), "]}\n")
end
