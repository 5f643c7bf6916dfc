-- The wrk side of the HTTP bench (wrk.ts starts it). Every request is a distinct signed delivery read
-- from a file of whole pre-formatted HTTP requests, all the same length, so a request costs wrk one
-- buffered read: signing in Lua would make wrk the bottleneck again, which is why autocannon was replaced.
--
-- Arguments after `--`: the file, the length of one request, the first request to send, how many the
-- file holds from there.

local file, length, first, available

function init(args)
  file = assert(io.open(args[1], "rb"))
  file:setvbuf("full", 1048576)
  length = tonumber(args[2])
  first = tonumber(args[3])
  available = tonumber(args[4])
  file:seek("set", first * length)
  issued = 0
  -- Requests sent a second time because the file ran out: the bench reports them as failures, since a
  -- receiver answers a repeated id from its dedup store, which is cheaper than a delivery.
  repeated = 0
end

local position = 0 -- requests read since the last seek

function request()
  if position == available then
    file:seek("set", first * length)
    position = 0
  end
  if issued >= available then repeated = repeated + 1 end
  position = position + 1
  issued = issued + 1
  return file:read(length)
end

local threads = {}

function setup(thread)
  table.insert(threads, thread)
end

function done(summary, latency)
  local sent, reused = 0, 0
  for _, thread in ipairs(threads) do
    sent = sent + thread:get("issued")
    reused = reused + thread:get("repeated")
  end
  local errors = summary.errors
  -- os.clock() is this process's CPU time (all threads): how busy the load generator was.
  io.write(string.format(
    'BENCH_RESULT {"requests":%d,"durationMicros":%d,"non2xx":%d,"errors":%d,"sent":%d,"repeated":%d,'
      .. '"cpuMicros":%d}\n',
    summary.requests, summary.duration, errors.status,
    errors.connect + errors.read + errors.write + errors.timeout,
    sent, reused, math.floor(os.clock() * 1e6)))
  -- The whole latency histogram (µs:count per distinct value), so the bench can pool the runs of a
  -- round into one distribution instead of combining per-run percentiles.
  local counts = {}
  for i = 1, #latency do
    local micros, count = latency(i)
    counts[i] = string.format("%d:%d", micros, count)
  end
  io.write("BENCH_LATENCY ", table.concat(counts, " "), "\n")
end
