-- wrk's statistics as one JSON line, for the lab to read instead of wrk's text.
-- Only done() is defined: wrk keeps its static request and never calls Lua per
-- request, so the script costs nothing while the load runs.
-- Times are wrk's own microseconds; the line starts with a marker so that it
-- can be told apart from wrk's text report above it.

local function number(x)
  if x ~= x or x == math.huge or x == -math.huge then
    return "null"                      -- JSON has no NaN or infinity
  end
  return string.format("%.17g", x)
end

function done(summary, latency, requests)
  local e = summary.errors
  local fields = {
    {"requests", summary.requests},
    {"duration_us", summary.duration},
    {"bytes", summary.bytes},
    {"connect", e.connect},
    {"read", e.read},
    {"write", e.write},
    {"status", e.status},
    {"timeout", e.timeout},
    {"mean_us", latency.mean},
    {"max_us", latency.max},
    {"p50_us", latency:percentile(50)},
    {"p90_us", latency:percentile(90)},
    {"p99_us", latency:percentile(99)},
  }
  local parts = {}
  for i, kv in ipairs(fields) do
    parts[i] = string.format('"%s":%s', kv[1], number(kv[2]))
  end
  io.write("wrk-report ", "{", table.concat(parts, ","), "}\n")
end
