-- Bulk-50 usage posting against the sandbox: the same 50 events as prism-post.lua, on a
-- rateable demo SRID, each call with its own reference_id, so that every call's 50 events
-- are rated and stored (a repeated pair would only be erred as DUPLICATE_EVENT).
-- The API key comes from the environment (BENCH_API_KEY), set by bench/vs-prism.sh.
-- The body is cut once (in init) around the reference_id slots; a call only fills them in and
-- joins the pieces, so the client spends little CPU per call on the machine it shares with
-- the server (Prism's script sends one fixed body and spends none).
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
wrk.headers["X-Api-Key"] = os.getenv("BENCH_API_KEY") or "k"

local parts, counter, prefix = {}, 0, ""

function init(args)
  math.randomseed(os.time() + math.floor(os.clock() * 1e6))
  prefix = string.format("wrk-%d-%d-", os.time(), math.random(1, 1e9))
  parts[1] = '{"mode":"FAIL_ON_EXISTING","usage_events":['
  for i = 1, 50 do
    local sep = i > 1 and "," or ""
    parts[#parts + 1] = sep .. '{"start_time":"2026-11-02T10:00:00Z","service_resource_identifier":"srv-compute-0001","usage_uom":"MINUTE","usage_amount":5,"reference_id":"'
    parts[#parts + 1] = "" -- this call's reference_id
    parts[#parts + 1] = string.format('","sequence_id":"%d"}', i)
  end
  parts[#parts + 1] = "]}"
end

function request()
  counter = counter + 1
  local ref = prefix .. counter
  for i = 3, #parts - 1, 3 do
    parts[i] = ref
  end
  return wrk.format(nil, nil, nil, table.concat(parts))
end
