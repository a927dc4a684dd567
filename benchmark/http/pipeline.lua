-- wrk script: HTTP/1.1 pipelining. Each connection sends DEPTH requests for "/" in one write and
-- sends the next DEPTH once all their replies are in (wrk counts every reply as a request).
--   wrk -t1 -c100 -d5s -s benchmark/http/pipeline.lua http://127.0.0.1:PORT/ -- 16
-- DEPTH is the first argument after "--" (default 16). Used by benchmark/client_efficiency.sh
-- and benchmark/http_bench.sh.

init = function(args)
  local depth = tonumber(args[1]) or 16
  local one = wrk.format("GET", "/")
  batch = string.rep(one, depth)
end

request = function()
  return batch
end
