-- wrk script: POST a small streamed chat completion with the buyer key from $CAIRVA_BENCH_KEY.
wrk.method = "POST"
wrk.path = "/v1/chat/completions"
wrk.headers["Content-Type"] = "application/json"
local key = os.getenv("CAIRVA_BENCH_KEY")
if key and key ~= "" then wrk.headers["Authorization"] = "Bearer " .. key end
wrk.body = '{"model":"gpt-4o-mini","messages":[{"role":"user","content":"Say hello in five words."}],"max_tokens":64,"stream":true,"stream_options":{"include_usage":true}}'
