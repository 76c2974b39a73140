"""Takeover (docs/operations.md#takeover): a run whose process is killed or shut down goes on in another.

Two uvicorn processes on the test's PostgreSQL database. The client follows each run through the other
process (`GET …/runs/{runId}/events`), as a resumed client does; the run is started with
`onDisconnect: "continue"` so that the start's own connection does not matter.
"""
from __future__ import annotations

import signal
import threading
import time
from contextlib import contextmanager
from typing import Iterator

import pytest
import requests

from runs.models import Run, RunEvent
from tests.conftest import Api
from tests.support.live import LiveServer
from tests.support.sse import iter_frames
from threads.models import Message

pytestmark = [pytest.mark.django_db(transaction=True)]

# Lease short, so a takeover comes soon after a kill (a third of it without renewal), yet long enough
# that a busy machine's late renewal does not look like a dead process; the model slow, so the kill
# lands mid-answer.
ENV = {"RUN_LEASE_SECONDS": "9", "OFFLINE_MODEL_DELAY": "0.1", "RUN_WATCH_INTERVAL": "0.2"}
LONG = "Tell me everything about it. " * 10  # the offline model's answer: ~30 deltas, 0.1 s apart


@contextmanager
def two_servers(name: str, env: dict[str, str] | None = None) -> Iterator[tuple[LiveServer, LiveServer]]:
    a = LiveServer(f"{name}-a", {**ENV, **(env or {})})
    try:
        b = LiveServer(f"{name}-b", {**ENV, **(env or {})})
        try:
            yield a, b
        finally:
            b.stop()
    finally:
        if a.process.poll() is None:
            a.stop()
        else:
            a._log.close()


def body(text: str) -> dict:
    return {"userKey": "alice", "onDisconnect": "continue",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def start(api: Api, text: str) -> tuple[requests.Response, str, str]:
    started = api.post("/v1/threads/runs", body(text), stream=True)
    assert started.status_code == 200, started.text
    return started, started.headers["X-Thread-Id"], started.headers["X-Run-Id"]


def follow(api: Api, thread_id: str, run_id: str) -> Iterator[tuple[int, dict]]:
    response = api.session.get(f"{api.base_url}/v1/threads/{thread_id}/runs/{run_id}/events",
                               params={"userKey": "alice"}, stream=True, timeout=90)
    assert response.status_code == 200, response.text
    return iter_frames(response)


def read_until(frames: Iterator[tuple[int, dict]], predicate) -> list[tuple[int, dict]]:
    got = []
    for frame in frames:
        got.append(frame)
        if predicate(got):
            return got
    raise AssertionError(f"the stream ended first: {[e['type'] for _, e in got]}")


def texts_of(events: list[dict], message_id: str) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT" and e["messageId"] == message_id)


def assert_taken_over_once(frames: list[tuple[int, dict]], run_id: str) -> list[dict]:
    """The client's stream: ids 1, 2, 3 … each once (nothing seen is sent again), one RUN_STARTED,
    the takeover, and RUN_FINISHED last; the step in flight carried on (runs/carry.py): no snapshot,
    no message or tool call started twice, each ended once; returns the events."""
    assert [seq for seq, _ in frames] == list(range(1, len(frames) + 1))
    events = [e for _, e in frames]
    types = [e["type"] for e in events]
    assert types.count("RUN_STARTED") == 1 and "RUN_ERROR" not in types
    assert types[-1] == "RUN_FINISHED" and types.count("RUN_FINISHED") == 1
    assert sum(e.get("name") == "tambo.run.takeover" for e in events) >= 1
    assert "MESSAGES_SNAPSHOT" not in types
    for opener, closer, key in (("TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "messageId"),
                                ("TOOL_CALL_START", "TOOL_CALL_END", "toolCallId")):
        opened = [e[key] for e in events if e["type"] == opener]
        closed = [e[key] for e in events if e["type"] == closer]
        assert len(opened) == len(set(opened)) and sorted(opened) == sorted(closed), (opener, opened, closed)
    history = Run.objects.get(id=run_id).takeovers
    assert [entry["reason"] for entry in history] in (["lease_expired"], ["handover"])
    return events


def answer_after(events: list[dict]) -> tuple[str, str]:
    """(message id, text) of the last text message the stream shows."""
    last = [e for e in events if e["type"] == "TEXT_MESSAGE_START"][-1]["messageId"]
    return last, texts_of(events, last)


def test_a_run_whose_process_is_killed_mid_answer_is_finished_by_the_other_process(api_key):
    with two_servers("takeover-kill") as (a, b):
        api_a, api_b = Api(a.url, api_key), Api(b.url, api_key)
        _, thread_id, run_id = start(api_a, LONG)
        frames = follow(api_b, thread_id, run_id)
        seen = read_until(frames, lambda got: sum(e["type"] == "TEXT_MESSAGE_CONTENT" for _, e in got) >= 3)
        a.process.kill()  # kill -9 mid-answer: nothing is released, nothing stored
        a.process.wait()
        rest = list(frames)

    events = assert_taken_over_once(seen + rest, run_id)
    message_id, text = answer_after(events)
    # The redone step carried the half one on: the same message, the text seen then the rest, once.
    (half,) = {e["messageId"] for _, e in seen if e["type"] == "TEXT_MESSAGE_START"}
    assert message_id == half and text.startswith(texts_of([e for _, e in seen], half))
    assert text.startswith("(offline model) You said: " + LONG.strip()) and text.count("(offline model)") == 1
    assert text.endswith("to use a real model.")
    run = Run.objects.get(id=run_id)
    assert run.status == Run.Status.COMPLETED and run.takeover_count == 1
    # The stored thread holds the answer once, whole, under the id the client saw.
    (stored,) = Message.objects.filter(thread_id=thread_id, role="assistant")
    assert stored.id == message_id and not stored.is_cancelled
    assert stored.content == [{"type": "text", "text": text}]


@pytest.mark.parametrize("when", ["before", "after"])
def test_a_run_killed_before_or_after_its_server_tool_call_ends_with_one_result_and_one_answer(
        project, api_key, when):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate", enabled=True)
    # The answer after the tool is short ("Tool calculate returned: 202", three deltas): slower still.
    with two_servers(f"takeover-tool-{when}", {"OFFLINE_MODEL_DELAY": "0.6"}) as (a, b):
        api_a, api_b = Api(a.url, api_key), Api(b.url, api_key)
        _, thread_id, run_id = start(api_a, 'Please use calculate with {"expression": "(1 + 2) * 3 + 40 * 5 - 7"}')
        frames = follow(api_b, thread_id, run_id)
        if when == "before":  # while the model streams the call's arguments: nothing of the step stored
            seen = read_until(frames, lambda got: got[-1][1]["type"] == "TOOL_CALL_ARGS")
        else:  # the result stored, the model answering from it
            seen = read_until(frames, lambda got: got[-1][1]["type"] == "TEXT_MESSAGE_CONTENT"
                              and any(e["type"] == "TOOL_CALL_RESULT" for _, e in got))
        a.process.kill()
        a.process.wait()
        rest = list(frames)

    events = assert_taken_over_once(seen + rest, run_id)
    _, text = answer_after(events)
    assert "Tool calculate returned: 202" in text
    assert Run.objects.get(id=run_id).status == Run.Status.COMPLETED
    stored = list(Message.objects.filter(thread_id=thread_id).order_by("created_at").values_list("role", flat=True))
    assert stored == ["user", "assistant", "tool", "assistant"]


class Follower(threading.Thread):
    """Reads one run's events through a process to their end, on a thread."""

    def __init__(self, api: Api, thread_id: str, run_id: str):
        super().__init__(daemon=True)
        self.api, self.thread_id, self.run_id = api, thread_id, run_id
        self.frames: list[tuple[int, dict]] = []
        self.reading = threading.Event()
        self.error: str | None = None

    def run(self) -> None:
        try:
            for frame in follow(self.api, self.thread_id, self.run_id):
                self.frames.append(frame)
                if frame[1]["type"] == "TEXT_MESSAGE_CONTENT":
                    self.reading.set()
        except requests.RequestException as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        finally:
            self.reading.set()


def test_a_deploy_hands_twenty_open_runs_over_and_every_one_finishes(api_key):
    with two_servers("takeover-deploy", {"OFFLINE_MODEL_DELAY": "0.2"}) as (a, b):
        api_a, api_b = Api(a.url, api_key), Api(b.url, api_key)
        started = [start(api_a, LONG) for _ in range(20)]
        followers = [Follower(api_b, thread_id, run_id) for _, thread_id, run_id in started]
        for follower in followers:
            follower.start()
        for follower in followers:
            assert follower.reading.wait(60)
        a.process.send_signal(signal.SIGTERM)
        assert a.process.wait(timeout=60) == -signal.SIGTERM
        for follower in followers:
            follower.join(90)
        log = a.log_text()

    assert [f.error for f in followers] == [None] * 20
    ends = [f.frames[-1][1] for f in followers]
    assert [e["type"] for e in ends] == ["RUN_FINISHED"] * 20, ends
    assert not any(e.get("code") == "SERVER_SHUTTING_DOWN" for f in followers for _, e in f.frames)
    for follower in followers:
        events = assert_taken_over_once(follower.frames, follower.run_id)
        message_id, text = answer_after(events)
        (stored,) = Message.objects.filter(thread_id=follower.thread_id, role="assistant")
        assert stored.id == message_id and stored.content == [{"type": "text", "text": text}]
        assert Run.objects.get(id=follower.run_id).takeovers[0]["reason"] == "handover"
    assert "Traceback" not in log




def test_a_process_that_lost_its_run_logs_no_event_for_it(project):
    import asyncio

    from runs.stream.event_log import event_log_connection
    from threads import services as thread_services

    thread = thread_services.thread_create(project=project, user_key="alice")
    Run.objects.create(id="run_lost", thread=thread, owner="proc_the_new_owner")
    Run.objects.create(id="run_mine", thread=thread)

    async def write() -> None:
        try:
            await event_log_connection.write([("run_lost", 1, "{}", False), ("run_mine", 1, "{}", False)])
        finally:
            await event_log_connection.close()

    asyncio.run(write())
    assert list(RunEvent.objects.values_list("run_id", flat=True)) == ["run_mine"]


def test_a_server_tool_whose_result_was_not_stored_runs_again_and_the_run_finishes(project, api_key):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate", enabled=True)
    thread_id, run_id = _stopped_mid_tools(project, "calculate", {}, {"expression": "20 * 2 + 2"})
    server = LiveServer("takeover-redo", ENV)
    try:
        deadline = time.monotonic() + 60
        while Run.objects.get(id=run_id).takeover_count == 0:
            assert time.monotonic() < deadline, "the run was not taken over"
            time.sleep(0.1)
        events = [e for _, e in follow(Api(server.url, api_key), thread_id, run_id)]
    finally:
        server.stop()

    assert [e["content"] for e in events if e["type"] == "TOOL_CALL_RESULT"] == ["42"]
    assert events[-1]["type"] == "RUN_FINISHED"
    assert Run.objects.get(id=run_id).status == Run.Status.COMPLETED
    stored = list(Message.objects.filter(thread_id=thread_id).order_by("created_at"))
    assert [m.role for m in stored] == ["user", "assistant", "tool", "assistant"]
    assert stored[2].tool_call_id == "call_1" and stored[2].content[0]["content"][0]["text"] == "42"
    assert "Tool calculate returned: 42" in stored[3].content[0]["text"]


def _stopped_mid_tools(project, tool: str, resume: dict, arguments: dict | None = None) -> tuple[str, str]:
    """A run whose process stopped after storing a step that calls `tool`, before its result was
    stored: (thread id, run id). Its lease has run out."""
    from datetime import timedelta

    from django.utils import timezone

    from threads import services as thread_services
    from threads.models import RunStatus, Thread

    thread = thread_services.thread_create(project=project, user_key="alice")
    run = Run.objects.create(thread=thread, status=Run.Status.STREAMING, resume=resume,
                             partial_message_id="msg_seen", partial_text="Let me check")
    thread_services.message_create(thread=thread, role="user", content=[{"type": "text", "text": "hi"}], run_id=run.id)
    thread_services.message_create(thread=thread, role="assistant", run_id=run.id, message_id="msg_step",
                                   content=[{"type": "tool_use", "id": "call_1", "name": tool,
                                             "input": arguments or {}}])
    Thread.objects.filter(id=thread.id).update(run_status=RunStatus.STREAMING, current_run_id=run.id,
                                               lease_expires_at=timezone.now() - timedelta(seconds=1))
    return thread.id, run.id


@pytest.mark.parametrize("case", ["client tool", "mcp tool not safe to repeat"])
def test_a_run_that_cannot_be_taken_over_fails_with_its_reason(project, api_key, case):
    from tests.runs.conftest import WEATHER_TOOL
    from tests.support.mcp_fixtures import SERVER_SCRIPT
    from tools.models import McpServer

    if case == "client tool":
        thread_id, run_id = _stopped_mid_tools(project, "get_weather", {"tools": [WEATHER_TOOL]})
        reason = "a client tool call was pending"
    else:
        import sys

        McpServer.objects.create(project=project, name="kept", transport="stdio", command=sys.executable,
                                 args=[str(SERVER_SCRIPT), "stdio"])
        thread_id, run_id = _stopped_mid_tools(project, "kept__add", {})
        reason = "its tool kept__add is not safe to run again"
    server = LiveServer("takeover-refused", ENV)
    try:
        deadline = time.monotonic() + 60
        while Run.objects.get(id=run_id).status == Run.Status.STREAMING:
            assert time.monotonic() < deadline, "the run was not taken over"
            time.sleep(0.1)
        events = [e for _, e in follow(Api(server.url, api_key), thread_id, run_id)]
    finally:
        server.stop()

    run = Run.objects.get(id=run_id)
    assert (run.status, run.error_code, run.takeover_count) == (Run.Status.FAILED, "RUN_LEASE_EXPIRED", 1)
    assert reason in run.error_message
    assert (events[-1]["type"], events[-1]["code"]) == ("RUN_ERROR", "RUN_LEASE_EXPIRED")
    # As before takeovers: the text the client saw is kept, marked cancelled; nothing was run again.
    stored = {m.id: m for m in Message.objects.filter(thread_id=thread_id)}
    assert stored["msg_seen"].is_cancelled and stored["msg_seen"].content == [{"type": "text", "text": "Let me check"}]
    assert not Message.objects.filter(thread_id=thread_id, role="tool").exists()


@pytest.mark.both_dbs
def test_a_run_killed_with_its_only_process_is_finished_when_the_server_starts_again(api_key):
    """SQLite's case (one process): takeover on a restart on the same database."""
    first = LiveServer("takeover-restart-1", ENV)
    try:
        _, thread_id, run_id = start(Api(first.url, api_key), LONG)
        read_until(follow(Api(first.url, api_key), thread_id, run_id),
                   lambda got: sum(e["type"] == "TEXT_MESSAGE_CONTENT" for _, e in got) >= 3)
    finally:
        first.process.kill()
        first.process.wait()
        first._log.close()
    second = LiveServer("takeover-restart-2", ENV)
    try:
        # Once the run streams there: on SQLite a reader of a run that streams nowhere reads the log only.
        deadline = time.monotonic() + 60
        while not RunEvent.objects.filter(run_id=run_id, data__contains="tambo.run.takeover").exists():
            assert time.monotonic() < deadline, "the run was not taken over"
            time.sleep(0.1)
        rest = list(follow(Api(second.url, api_key), thread_id, run_id))
    finally:
        second.stop()
    # Read from the start: what the first process sent but had not logged yet is not in the log.
    events = assert_taken_over_once(rest, run_id)
    message_id, text = answer_after(events)
    (stored,) = Message.objects.filter(thread_id=thread_id, role="assistant")
    assert stored.id == message_id and stored.content == [{"type": "text", "text": text}]
