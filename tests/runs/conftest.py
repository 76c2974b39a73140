"""Helpers for the run tests: start runs over HTTP, read their events, poll the thread's status."""
from __future__ import annotations

import time
from typing import Any

import pytest
import requests

from tests.support.sse import read_events

WEATHER_TOOL = {"name": "get_weather", "description": "Weather for a city.",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
CLOCK_TOOL = {"name": "read_clock", "description": "The time shown on the user's clock.",
              "inputSchema": {"type": "object", "properties": {}}}


def text_message(text: str, **extra: Any) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "text", "text": text}], **extra}


def tool_result(tool_use_id: str, text: str, **extra: Any) -> dict[str, Any]:
    return {"type": "tool_result", "toolUseId": tool_use_id, "content": [{"type": "text", "text": text}], **extra}


class Runs:
    """Run requests through one `Api` (one project key, one user key)."""

    def __init__(self, api):  # tests.conftest.Api
        self.api = api

    def body(self, message: dict | str, **extra: Any) -> dict[str, Any]:
        if isinstance(message, str):
            message = text_message(message)
        return {"userKey": self.api.user_key, "message": message, **extra}

    def post_new(self, message: dict | str, **extra: Any) -> requests.Response:
        """POST /v1/threads/runs, streaming."""
        return self.api.post("/v1/threads/runs", self.body(message, **extra), stream=True)

    def post(self, thread_id: str, message: dict | str, **extra: Any) -> requests.Response:
        """POST /v1/threads/{id}/runs, streaming."""
        return self.api.post(f"/v1/threads/{thread_id}/runs", self.body(message, **extra), stream=True)

    def run_new(self, message: dict | str, **extra: Any) -> tuple[str, list[dict]]:
        """A whole run on a new thread: (thread id, events)."""
        response = self.post_new(message, **extra)
        assert response.status_code == 200, response.text
        return response.headers["X-Thread-Id"], read_events(response)

    def run(self, thread_id: str, message: dict | str, **extra: Any) -> list[dict]:
        response = self.post(thread_id, message, **extra)
        assert response.status_code == 200, response.text
        return read_events(response)

    def thread(self, thread_id: str) -> dict[str, Any]:
        return self.api.thread(thread_id)

    def wait_idle(self, thread_id: str, timeout: float = 20.0) -> dict[str, Any]:
        """Polls the thread until it is idle (bounded, so a stuck lock fails the test instead of hanging)."""
        deadline = time.monotonic() + timeout
        while True:
            thread = self.thread(thread_id)
            if thread["runStatus"] == "idle":
                return thread
            assert time.monotonic() < deadline, f"thread still {thread['runStatus']}: {thread}"
            time.sleep(0.05)

    def wait_status(self, thread_id: str, status: str, timeout: float = 20.0) -> dict[str, Any]:
        deadline = time.monotonic() + timeout
        while True:
            thread = self.thread(thread_id)
            if thread["runStatus"] == status:
                return thread
            assert time.monotonic() < deadline, f"thread never became {status}: {thread}"
            time.sleep(0.02)


def event_of(events: list[dict], kind: str, name: str | None = None) -> dict:
    matches = [e for e in events if e["type"] == kind and (name is None or e.get("name") == name)]
    assert len(matches) == 1, (kind, name, [e["type"] for e in events])
    return matches[0]


def text_of(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


@pytest.fixture
def runs(api) -> Runs:
    return Runs(api)


def paused_thread(runs: Runs, text: str = 'Use get_weather {"city": "Paris"}',
                  tools: list[dict] | None = None) -> tuple[str, str, list[str]]:
    """A new thread whose first run paused on client tools: (thread id, run id, pending call ids)."""
    thread_id, events = runs.run_new(text, tools=tools or [WEATHER_TOOL])
    awaiting = event_of(events, "CUSTOM", "tambo.run.awaiting_input")
    run_id = events[0]["runId"]
    return thread_id, run_id, [call["toolCallId"] for call in awaiting["value"]["pendingToolCalls"]]


@pytest.fixture
def offline(settings):
    """The built-in offline model with no delay, for tests that run the app in-process."""
    from providers import reset_providers

    settings.MODEL_PROVIDER = "offline"
    settings.OFFLINE_MODEL_DELAY = 0.0
    reset_providers()
    yield
    reset_providers()
