"""Memory with the built-in offline model (no key): its extraction rule (docs/models.md, rule 7) and the
memory tools (docs/memory.md#tools), through the live server."""
from __future__ import annotations

import json

import pytest

from memory.models import Memory
from memory.services import memory_save
from tests.conftest import Api
from tests.memory.conftest import remembering, wait_extractions, wait_memories
from tests.runs.conftest import Runs, event_of
from tests.support.sse import types

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


def call(tool: str, **arguments) -> str:
    """A message the offline model answers by calling `tool` with `arguments` (docs/models.md, rule 3)."""
    return f"{tool} {json.dumps(arguments)}"


def test_the_offline_model_extracts_by_its_rule(api, project):
    remembering(project)
    runs = Runs(api)

    _, events = runs.run_new("Hello! I prefer short answers. Remember that my dog is called Rex. "
                             "Do I like tea? The weather is fine.")

    assert types(events)[-1] == "RUN_FINISHED"
    (row,) = wait_extractions(project, 1)
    assert row.outcome == "completed" and row.provider == "offline" and row.input_tokens > 0
    wait_memories(project, 2)
    stored = sorted(Memory.objects.values_list("content", "category", "importance", "user_key"))
    assert stored == [("I prefer short answers.", "preference", 3, "alice"),
                      ("my dog is called Rex.", "fact", 4, "alice")]


def test_a_project_that_does_not_remember_extracts_nothing(api, project, live_server_url):
    Runs(api).run_new("I prefer short answers.")
    remembering(project)  # then a run that remembers, whose extraction is the only one
    Runs(api).run_new("I prefer long answers.")

    wait_extractions(project, 1)
    wait_memories(project, 1)
    assert list(Memory.objects.values_list("content", flat=True)) == ["I prefer long answers."]


def test_the_model_saves_and_forgets_a_memory_with_its_tools(api, project):
    remembering(project, tools=True)
    runs = Runs(api)

    thread_id, events = runs.run_new(call("save_memory", content="The user likes green tea.", category="preference",
                                          importance=4))

    result = event_of(events, "TOOL_CALL_RESULT")
    saved = Memory.objects.get()
    assert result["content"] == f"Saved, as {saved.pk}."
    assert (saved.content, saved.category, saved.importance, saved.source, saved.thread_id) == (
        "The user likes green tea.", "preference", 4, "tool", thread_id)

    events = runs.run(thread_id, call("forget_memory", memory_id=saved.pk),
                      previousRunId=runs.thread(thread_id)["lastCompletedRunId"])

    assert event_of(events, "TOOL_CALL_RESULT")["content"] == f"Forgot {saved.pk}."
    saved.refresh_from_db()
    assert saved.deleted_at is not None
    wait_extractions(project, 2)  # each completed run's extraction, so none writes after the test


def test_the_tools_cannot_reach_another_users_memory(api, project, live_server_url):
    remembering(project, tools=True)
    alices = memory_save(project=project, user_key="alice", content="Alice's secret", category="fact").memory
    bob = Runs(Api(live_server_url, api.session.headers["x-api-key"], user_key="bob"))

    _, events = bob.run_new(call("forget_memory", memory_id=alices.pk))

    result = event_of(events, "TOOL_CALL_RESULT")
    assert result["content"] == f"Error: Tool forget_memory failed: The user has no memory {alices.pk}."
    alices.refresh_from_db()
    assert alices.deleted_at is None
    wait_extractions(project, 1)


def test_the_tools_are_offered_only_with_memory_tools_enabled(api, project):
    remembering(project)
    _, events = Runs(api).run_new(call("save_memory", content="The user likes tea."))

    assert "TOOL_CALL_START" not in types(events)
    assert "I was offered no tools" in "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    wait_extractions(project, 1)
    assert not Memory.objects.exists()


def test_the_project_file_takes_the_memory_settings_and_refuses_tools_without_memory():
    from projects.project_file import ProjectFileError, project_file_parse

    parsed = project_file_parse("projects:\n  - name: shop\n    memoryEnabled: true\n    memoryToolsEnabled: true\n")
    assert parsed.projects[0].memory_enabled and parsed.projects[0].memory_tools_enabled
    with pytest.raises(ProjectFileError, match="memoryToolsEnabled needs memoryEnabled"):
        project_file_parse("projects:\n  - name: shop\n    memoryToolsEnabled: true\n")
    with pytest.raises(ProjectFileError, match=r"projects\[0\]\.memoryEnabled"):
        project_file_parse("projects:\n  - name: shop\n    memoryEnabled: 'yes'\n")
