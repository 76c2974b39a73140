"""Logs as a machine reads them (LOG_FORMAT=json): one JSON object per line, an access line per
request and an end line per run with its ids, outcome, tokens and times; never the API key, the
metrics token or the message's text."""
from __future__ import annotations

import json

import pytest
import requests

from tests.conftest import Api
from tests.support.live import LiveServer
from tests.support.sse import read_events

METRICS_TOKEN = "metrics-token-not-in-logs"
TEXT = "my very private sentence 7f3a"


@pytest.fixture
def json_server(transactional_db):
    server = LiveServer("json-logs", {"LOG_FORMAT": "json", "LOG_LEVEL": "INFO", "METRICS_TOKEN": METRICS_TOKEN})
    try:
        yield server
    finally:
        server.stop()


def _entries(text: str) -> list[dict]:
    entries = []
    for line in text.splitlines():
        if line.startswith("{"):
            entries.append(json.loads(line))
        else:
            # Only uvicorn's own start and stop lines are not ours.
            assert line.startswith(("INFO:", "WARNING:", "ERROR:")) or not line.strip(), line
    return entries


def test_json_logs_have_request_and_run_lines_and_no_secret(json_server, api_key):
    api = Api(json_server.url, api_key)
    response = api.post("/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": TEXT}]}}, stream=True)
    events = list(read_events(response))
    assert events[-1]["type"] == "RUN_FINISHED"
    thread_id, run_id = events[0]["threadId"], events[0]["runId"]
    assert api.get(f"/v1/threads/{thread_id}").status_code == 200
    scrape = requests.get(json_server.url + "/metrics", headers={"Authorization": f"Bearer {METRICS_TOKEN}"},
                          timeout=10)
    assert scrape.status_code == 200

    json_server.stop()  # flushes the log
    text = json_server.log_path.read_text()
    entries = _entries(text)
    access = [e for e in entries if e["logger"] == "tambo.access"]
    routes = {(e["route"], e["status"]) for e in access}
    assert ("/v1/threads/runs", 200) in routes and ("/metrics", 200) in routes
    assert ("/v1/threads/<str:thread_id>", 200) in routes
    [end] = [e for e in entries if e["logger"] == "tambo.run"]
    assert (end["thread"], end["run"], end["project"], end["outcome"]) == (thread_id, run_id, "test-project",
                                                                            "completed")
    assert end["output_tokens"] > 0 and end["ttft_ms"] is not None and end["duration_ms"] >= end["ttft_ms"]
    assert "trace_id" in end  # null while tracing is off
    for secret in (api_key, METRICS_TOKEN, TEXT, "private sentence"):
        assert secret not in text, secret
