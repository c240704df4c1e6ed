-- wrk's summary as one JSON object on stdout (read by workloads/http/wrk.py).
-- Latencies are in microseconds, duration too; errors by kind (status: a response with status >= 400).
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '\nWRK_JSON {"requests": %d, "duration_us": %d, "bytes": %d, ' ..
    '"errors_connect": %d, "errors_read": %d, "errors_write": %d, ' ..
    '"errors_status": %d, "errors_timeout": %d, ' ..
    '"latency_us_mean": %.1f, "latency_us_max": %d, "latency_us_p50": %d, ' ..
    '"latency_us_p90": %d, "latency_us_p99": %d, "latency_us_p999": %d}\n',
    summary.requests, summary.duration, summary.bytes,
    e.connect, e.read, e.write, e.status, e.timeout,
    latency.mean, latency.max, latency:percentile(50),
    latency:percentile(90), latency:percentile(99), latency:percentile(99.9)))
end
