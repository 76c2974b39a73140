"""Memory through the live server with the `openai` provider and the scripted fake vendor: what a
user says in one thread reaches the system prompt of their next thread, and of no one else's
(docs/memory.md)."""
from __future__ import annotations

import json
from typing import Iterator

import pytest

from memory.models import Memory
from memory.prompt import HEADER
from memory.services import memory_save
from providers.estimate import message_tokens
from projects.config import Limits
from projects.models import ApiKey, Project
from telemetry.models import Usage
from tests.conftest import Api
from tests.memory.conftest import remembering, wait_extractions, wait_memories
from tests.runs.conftest import Runs
from tests.support.fake_openai import Stall, Text
from tests.support.fixtures_openai import Vendor, fake, vendor  # noqa: F401 - fixtures
from tests.support.live import LiveServer, openai_live_server
from tests.support.sse import types

pytestmark = pytest.mark.django_db(transaction=True)


def extracted(*memories: tuple[str, str, int]) -> Text:
    """The vendor's answer to an extraction: these (content, category, importance)."""
    return Text(json.dumps({"memories": [{"content": c, "category": k, "importance": i} for c, k, i in memories]}))


@pytest.fixture(scope="module")
def openai_server(vendor, django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    with openai_live_server("memory-openai", vendor.base_url, "sk-memory", OPENAI_MODEL="fake-default") as server:
        yield server


def runs_as(server: LiveServer, project, user_key: str) -> Runs:
    _, raw = ApiKey.generate(project, f"key of {user_key}")
    return Runs(Api(server.url, raw, user_key=user_key))


def system_prompt(request) -> str:
    first = request.body["messages"][0]
    assert first["role"] == "system"
    return first["content"]


def test_a_preference_stated_in_one_thread_shapes_the_system_prompt_of_the_next(openai_server, project,
                                                                                   fake: Vendor):
    remembering(project)
    alice = runs_as(openai_server, project, "alice")
    fake.script(Text("Noted."), extracted(("The user prefers metric units.", "preference", 4)))

    _, events = alice.run_new("Please always use metric units, I prefer them.")

    assert types(events)[-1] == "RUN_FINISHED"
    (row,) = wait_extractions(project, 1)
    run_request, extraction = fake.requests
    assert "metric" not in system_prompt(run_request)
    # The extraction is asked for JSON about this turn, and is metered like any call.
    assert extraction.body.get("stream") is not True and extraction.body["response_format"] == {"type": "json_object"}
    assert "I prefer them" in extraction.body["messages"][1]["content"]
    assert (row.outcome, row.user_key, row.input_tokens > 0, row.output_tokens > 0) == ("completed", "alice", True, True)
    (memory,) = wait_memories(project, 1)
    assert (memory.content, memory.category, memory.importance, memory.source) == (
        "The user prefers metric units.", "preference", 4, "extracted")

    fake.script(Text("8,849 metres."), extracted())
    alice.run_new("How tall is Everest?")  # a new thread

    wait_extractions(project, 2)
    assert "- (preference) The user prefers metric units." in system_prompt(fake.requests[2])


def test_a_user_never_sees_another_users_memories_in_any_project(openai_server, project, fake: Vendor):
    other = Project.objects.create(name="other-project")
    remembering(project)
    remembering(other)

    def turn(where, user_key: str, text: str, *replies) -> str:
        """One run and its extraction, answered by `replies`; the system prompt the run's call had."""
        fake.script(*replies)
        seen = len(fake.requests)
        runs_as(openai_server, where, user_key).run_new(text)
        wait_extractions(where, Usage.objects.filter(project=where, kind="run").count())
        return system_prompt(fake.requests[seen])

    turn(project, "alice", "My name is Ada.", Text("Hello Ada."), extracted(("The user's name is Ada.", "fact", 5)))
    wait_memories(project, 1)
    bob = turn(project, "bob", "Hello, who am I?", Text("Hi."), extracted())
    # The same user key in another project is another user.
    alice_elsewhere = turn(other, "alice", "Hello, who am I?", Text("Hi."), extracted())
    alice = turn(project, "alice", "Hello, who am I?", Text("Hi Ada."), extracted())

    assert "Ada" not in bob and "Ada" not in alice_elsewhere
    assert "The user's name is Ada." in alice
    assert Memory.objects.filter(user_key="alice", project=project).count() == 1
    assert not Memory.objects.exclude(user_key="alice", project=project).exists()


def test_the_extraction_is_limited_like_any_call(openai_server, project, fake: Vendor):
    remembering(project, limits=Limits(runs_per_minute_per_user=1))
    fake.script(Text("Noted."))  # no second reply: the extraction must not reach the vendor

    _, events = runs_as(openai_server, project, "alice").run_new("I prefer tea.")

    assert types(events)[-1] == "RUN_FINISHED"
    log = "A memory extraction failed: RATE_LIMITED"
    wait_for_log(openai_server, log)
    assert len(fake.requests) == 1 and not Memory.objects.exists()
    assert not Usage.objects.filter(kind=Usage.Kind.MEMORY).exists()


def wait_for_log(server: LiveServer, text: str, timeout: float = 20.0) -> None:
    import time

    deadline = time.monotonic() + timeout
    while text not in server.log_text():
        assert time.monotonic() < deadline, f"{text!r} never appeared in {server.log_path}"
        time.sleep(0.05)


def test_the_run_ends_before_its_extraction_answers(openai_server, project, fake: Vendor):
    remembering(project)
    # The extraction's model call hangs for a while; the run must not wait for it.
    fake.script(Text("Noted."), Stall(seconds=8))

    _, events = runs_as(openai_server, project, "alice").run_new("I prefer tea.")

    assert types(events)[-1] == "RUN_FINISHED"
    # The run's end came while the extraction was still waiting for the vendor: no usage row yet.
    assert not Usage.objects.filter(kind=Usage.Kind.MEMORY).exists()
    (row,) = wait_extractions(project, 1)
    assert row.outcome == "failed" and not Memory.objects.exists()


def test_the_memories_in_the_system_prompt_keep_within_the_context_budget(openai_server, vendor, project,
                                                                            fake: Vendor):
    # A budget of 500 input tokens: the memories get at most a quarter of it, and less when the
    # message itself takes most of it. The project's own model name, whose estimates no reported
    # usage calibrates (the fake reports no prompt tokens here), so the budget counts as the test does.
    remembering(project, max_input_tokens=600, max_output_tokens=100, models=[
        {"provider": "openai", "model": "fake-budget", "baseUrl": vendor.base_url, "apiKey": "env:OPENAI_API_KEY"}])
    for n in range(30):
        memory_save(project=project, user_key="alice", content=f"Memory number {n:02d} of the user, a plain fact.",
                    category="fact", importance=5 if n < 3 else 1)
    alice = runs_as(openai_server, project, "alice")
    uncounted = {"prompt_tokens": 0, "completion_tokens": 1, "total_tokens": 1}
    fake.script(Text("ok", usage=uncounted), extracted(), Text("ok", usage=uncounted), extracted())

    _, short = alice.run_new("Hi.")
    wait_extractions(project, 1)
    _, long = alice.run_new("word " * 300)  # about 380 tokens of the 500
    wait_extractions(project, 2)

    assert types(short)[-1] == types(long)[-1] == "RUN_FINISHED"  # never CONTEXT_TOO_LARGE for memories
    roomy, tight = (system_prompt(fake.requests[i]) for i in (0, 2))
    listed = [line for line in roomy.splitlines() if line.startswith("- (fact) Memory number")]
    # The most important first, the newest of them first; the section within a quarter of the budget.
    assert listed[:3] == [f"- (fact) Memory number {n:02d} of the user, a plain fact." for n in (2, 1, 0)]
    assert 3 < len(listed) < 30
    assert message_tokens({"content": roomy[roomy.index(HEADER):]}) <= 125
    # Beside a long message only what the budget leaves: the most important still.
    assert [line for line in tight.splitlines() if line.startswith("- (fact)")] == listed[:2]
    sent = fake.requests[2].body["messages"]
    assert message_tokens(sent[0]) + message_tokens(sent[-1]) <= 500
