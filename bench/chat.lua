-- wrk script: POST a small chat completion with the buyer key from $CAIRVA_BENCH_KEY.
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("CAIRVA_BENCH_KEY")
if key and key ~= "" then wrk.headers["Authorization"] = "Bearer " .. key end
wrk.body = '{"model":"gpt-4o-mini","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello in five words."}],"max_tokens":64}'
-- CAIRVA_BENCH_STREAM=1: the same completion streamed, with its usage in the last chunk.
if os.getenv("CAIRVA_BENCH_STREAM") == "1" then
  wrk.body = wrk.body:sub(1, -2) .. ',"stream":true,"stream_options":{"include_usage":true}}'
end

local non2xx = 0
response = function(status, headers, body)
  if status < 200 or status > 299 then non2xx = non2xx + 1 end
end

done = function(summary, latency, requests)
  io.write(string.format("BENCH requests=%d duration_us=%d rps=%.1f p50_us=%d p99_us=%d errors=%d non2xx=%d\n",
    summary.requests, summary.duration, summary.requests / (summary.duration / 1e6),
    latency:percentile(50), latency:percentile(99),
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.errors.status))
end
