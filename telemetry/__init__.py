"""What the server does and what it costs: usage records, Prometheus metrics, logs and traces, and
the admin's usage page. The run path and the request path call it through small hooks."""
