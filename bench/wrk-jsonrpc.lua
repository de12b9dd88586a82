-- wrk script of `npm run bench`: every request is the same HTTP method, body and
-- headers, given in the environment by bench/wrk.ts (a JSON-RPC call or batch, an API
-- key). WRK_METHOD (default POST), WRK_BODY (none when empty), WRK_HEADERS: one
-- "name: value" a line.

wrk.method = os.getenv("WRK_METHOD") or "POST"
local body = os.getenv("WRK_BODY") or ""
if body ~= "" then
  wrk.body = body
end
wrk.headers["Content-Type"] = "application/json"
for name, value in (os.getenv("WRK_HEADERS") or ""):gmatch("([^:\n]+):[ ]*([^\n]*)") do
  wrk.headers[name] = value
end
