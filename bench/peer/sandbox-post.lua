-- Bulk-50 usage posting against the sandbox: the same 50 events as prism-post.lua, on a
-- rateable demo SRID, each call with its own reference_id, so that every call's 50 events
-- are rated and stored (a repeated pair would only be erred as DUPLICATE_EVENT).
-- The API key comes from the environment (BENCH_API_KEY), set by bench/vs-prism.sh.
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Api-Key"] = os.getenv("BENCH_API_KEY") or "k"

local prefix, counter = "", 0
local head = '{"mode":"FAIL_ON_EXISTING","usage_events":['

function init(args)
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
  prefix = string.format("wrk-%d-%d-", os.time(), math.random(1, 1e9))
end

function request()
  counter = counter + 1
  local ref = prefix .. counter
  local evs = {}
  for i = 1, 50 do
    evs[i] = string.format('{"start_time":"2026-11-02T10:00:00Z","service_resource_identifier":"srv-compute-0001","usage_uom":"MINUTE","usage_amount":5,"reference_id":"%s","sequence_id":"%d"}', ref, i)
  end
  return wrk.format(nil, nil, nil, head .. table.concat(evs, ",") .. "]}")
end
