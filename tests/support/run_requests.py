"""Start runs over HTTP and read what they leave behind, for tests that act through the API.

`api` is a `tests.conftest.Api`. Runs are started for the user key "alice" (the `api` fixture's).
"""
from __future__ import annotations

from tests.support.sse import read_events


def user_message(text: str) -> dict:
    return {"role": "user", "content": [{"type": "text", "text": text}]}


def run(api, text: str | None = None, *, thread_id: str | None = None, **extra) -> tuple[str, list[dict]]:
    """A whole run, on `thread_id` or on a new thread: (thread id, events). Asserts the answer is 200.

    Without `text`, pass the message's blocks as `content=[...]` (a tool result, for example).
    """
    content = [{"type": "text", "text": text}] if text is not None else extra.pop("content")
    body = {"userKey": "alice", "message": {"role": "user", "content": content}, **extra}
    path = f"/v1/threads/{thread_id}/runs" if thread_id else "/v1/threads/runs"
    response = api.post(path, body, stream=True)
    assert response.status_code == 200, response.text
    return thread_id or response.headers["X-Thread-Id"], read_events(response)


def text_of(events: list[dict]) -> str:
    """All the text the assistant streamed in these events."""
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def tool_results(events: list[dict]) -> list[dict]:
    return [e for e in events if e["type"] == "TOOL_CALL_RESULT"]


def stored_results(api, thread_id: str) -> list[dict]:
    """The thread's tool-result messages as GET shows them (assistant, one tool_result block)."""
    messages = api.get(f"/v1/threads/{thread_id}").json()["messages"]
    found = [m for m in messages if any(b["type"] == "tool_result" for b in m["content"])]
    for message in found:
        assert message["role"] == "assistant"
        assert [b["type"] for b in message["content"]] == ["tool_result"]
    return [m["content"][0] for m in found]


def last_run_id(api, thread_id: str) -> str:
    return api.get(f"/v1/threads/{thread_id}").json()["lastCompletedRunId"]


def enable_tools(project, *names: str) -> None:
    """Enable these built-in server tools for the project."""
    from tools.models import ProjectTool

    for name in names:
        ProjectTool.objects.create(project=project, name=name)
