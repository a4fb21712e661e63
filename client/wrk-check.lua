-- The answers checked, appended by the lab to wrk-report.lua (its run copy
-- wrk-check.lua) for the check slice after each level (docs/methodology.md):
-- every 2xx/3xx response's status and exact body compared with the contract's,
-- given as the script's argument (`wrk ... URL -- BODY`). Defining
-- response() makes wrk hand every response to Lua, a cost on every request
-- whatever share of them is compared, which is why the measured level runs
-- without it. done() adds one line: "wrk-answers {checked, wrong, example}",
-- summed over wrk's threads (each runs its own copy of this script).

local report_done = done
local threads = {}
local expected = nil

checked, wrong, example = 0, 0, ""   -- globals: done() reads each thread's

function setup(thread)
  table.insert(threads, thread)
end

function init(args)
  expected = args[1] or ""
end

function response(status, headers, body)
  checked = checked + 1
  -- a 2xx/3xx answer other than the contract's; 4xx/5xx are failures, counted as such
  if status >= 200 and status < 400 and (status ~= 200 or body ~= expected) then
    wrong = wrong + 1
    if example == "" then
      example = status .. " " .. string.sub(body, 1, 120)
    end
  end
end

local function quoted(s)
  -- JSON string: quotes, backslashes, control and non-ASCII bytes escaped
  return '"' .. string.gsub(s, '[%c"\\\128-\255]', function(c)
    return string.format("\\u%04x", string.byte(c))
  end) .. '"'
end

function done(summary, latency, requests)
  report_done(summary, latency, requests)
  local c, w, ex = 0, 0, ""
  for _, t in ipairs(threads) do
    c = c + t:get("checked")
    w = w + t:get("wrong")
    if ex == "" then ex = t:get("example") end
  end
  io.write("wrk-answers ", string.format('{"checked":%d,"wrong":%d,"example":%s}', c, w,
                                         quoted(ex)), "\n")
end
