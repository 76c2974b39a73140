"""/v1 and AG-UI store a turn the same way (runs/turns.py `turn_store`): the answered or abandoned
tool calls, the new message and the paused run they close, over real HTTP on the live server."""
from __future__ import annotations

import uuid

import pytest

from runs.models import Run
from tests.conftest import Api
from tests.runs.conftest import WEATHER_TOOL, Runs, paused_thread, text_message, tool_result
from tests.runs.test_agui import WEATHER, assistant_of, run, run_input, user
from threads.models import Message, Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

ASK = 'Use get_weather {"city": "Paris"}'


def _stored_turn(thread_id: str, run_id: str) -> list[tuple]:
    """The rows the run's request stored, with the ids each path makes its own way left out."""
    rows = Message.objects.filter(thread_id=thread_id, run_id=run_id).exclude(role=Message.Role.ASSISTANT)
    return [(m.role, m.content, m.tool_call_id is not None, m.additional_context, m.is_cancelled)
            for m in rows.order_by("created_at", "id")]


def _normalised(rows: list[tuple], call_id: str) -> list[tuple]:
    return [(role, [{**b, "toolUseId": "CALL"} if b.get("toolUseId") == call_id else b for b in content], *rest)
            for role, content, *rest in rows]


def _v1_paused(runs: Runs) -> tuple[str, str, str]:
    thread_id, run_id, [call_id] = paused_thread(runs, ASK)
    return thread_id, run_id, call_id


def _agui_paused(api: Api, conversation: str) -> tuple[str, str, dict, dict]:
    ask = user(ASK)
    thread_id, events = run(api, run_input(conversation, [ask], tools=[WEATHER]))
    return thread_id, Thread.objects.get(id=thread_id).last_completed_run_id, ask, assistant_of(events)


def _second_run(thread_id: str, paused_run_id: str) -> str:
    return Run.objects.filter(thread_id=thread_id).exclude(id=paused_run_id).get().id


def test_an_answered_tool_call_is_stored_alike_and_closes_the_paused_run_on_both_paths(api: Api, runs: Runs):
    v1_thread, v1_paused, v1_call = _v1_paused(runs)
    runs.run(v1_thread, {"role": "user", "content": [tool_result(v1_call, '{"forecast": "sunny"}')]},
             previousRunId=v1_paused, tools=[WEATHER_TOOL])
    conversation = f"conv-{uuid.uuid4()}"
    agui_thread, agui_paused, ask, assistant = _agui_paused(api, conversation)
    [call] = assistant["toolCalls"]
    answer = {"id": "t-1", "role": "tool", "toolCallId": call["id"], "content": '{"forecast": "sunny"}'}
    run(api, run_input(conversation, [ask, assistant, answer], tools=[WEATHER]))

    v1_rows = _normalised(_stored_turn(v1_thread, _second_run(v1_thread, v1_paused)), v1_call)
    agui_rows = _normalised(_stored_turn(agui_thread, _second_run(agui_thread, agui_paused)), call["id"])
    assert v1_rows == agui_rows == [
        ("tool", [{"type": "tool_result", "toolUseId": "CALL",
                   "content": [{"type": "text", "text": '{"forecast": "sunny"}'}]}], True, None, False)]
    assert Run.objects.get(id=v1_paused).status == Run.Status.COMPLETED
    assert Run.objects.get(id=agui_paused).status == Run.Status.COMPLETED


def test_a_call_the_user_moved_on_from_is_answered_with_the_same_error_and_closes_the_paused_run(
        api: Api, runs: Runs):
    v1_thread, v1_paused, v1_call = _v1_paused(runs)
    runs.run(v1_thread, text_message("never mind, tell me a joke"), previousRunId=v1_paused, tools=[WEATHER_TOOL])
    conversation = f"conv-{uuid.uuid4()}"
    agui_thread, agui_paused, ask, assistant = _agui_paused(api, conversation)
    run(api, run_input(conversation, [ask, assistant, user("never mind, tell me a joke")], tools=[WEATHER]))

    v1_rows = _normalised(_stored_turn(v1_thread, _second_run(v1_thread, v1_paused)), v1_call)
    agui_rows = _normalised(_stored_turn(agui_thread, _second_run(agui_thread, agui_paused)),
                            assistant["toolCalls"][0]["id"])
    assert v1_rows == agui_rows
    assert [role for role, *_ in v1_rows] == ["tool", "user"]
    assert v1_rows[0][1][0]["isError"] is True
    assert Run.objects.get(id=v1_paused).status == Run.Status.COMPLETED
    assert Run.objects.get(id=agui_paused).status == Run.Status.COMPLETED
