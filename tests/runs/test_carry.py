"""A step carried on after a takeover (runs/carry.py): the client is sent only what follows what it saw.

Pure bookkeeping: a Step seeded with what the client saw, fed a model's deltas, gives the events and
the stored content. The two processes and the official client: tests/runs/test_takeover_official_client.py.
"""
from __future__ import annotations

from clientsdk import wire
from providers.base import TextDelta, ToolCallDelta
from runs.carry import Carried, CarriedCall, Echo
from runs.step import Step
from runs.toolbox import Toolbox


def carried_step(carried: Carried) -> Step:
    step = Step(message_id="msg_new", toolbox=Toolbox(client_tools={"calc": wire.ClientTool(name="calc")}))
    step.carry(carried)
    return step


def run(step: Step, deltas) -> list[dict]:
    events = [e for d in deltas for e in step.on_delta(d)] + list(step.finish())
    return [e.model_dump(by_alias=True, exclude_none=True, exclude={"timestamp"}) for e in events]


def test_a_model_that_answers_anew_sends_only_what_follows_the_text_seen():
    step = carried_step(Carried(message_id="msg_seen", text="Hello wor", text_open=True))
    events = run(step, [TextDelta("Hel"), TextDelta("lo w"), TextDelta("orld, "), TextDelta("again.")])
    assert [(e["type"], e.get("delta")) for e in events] == [
        ("TEXT_MESSAGE_CONTENT", "ld, "), ("TEXT_MESSAGE_CONTENT", "again."), ("TEXT_MESSAGE_END", None)]
    assert {e["messageId"] for e in events} == {"msg_seen"}
    assert step.content() == [{"type": "text", "text": "Hello world, again."}]


def test_a_model_that_continues_the_text_has_all_it_sends_shown_after_it():
    step = carried_step(Carried(message_id="msg_seen", text="The answer is ", text_open=True))
    assert Carried(text="The answer is ").prefill() == [{"role": "assistant", "content": "The answer is"}]
    events = run(step, [TextDelta(" 42"), TextDelta(".")])
    # The prefill left the trailing space out; the one the model puts back is not doubled.
    assert [e.get("delta") for e in events if e["type"] == "TEXT_MESSAGE_CONTENT"] == ["42", "."]
    assert step.content() == [{"type": "text", "text": "The answer is 42."}]


def test_text_seen_then_ended_and_nothing_more_opens_no_message_again():
    step = carried_step(Carried(message_id="msg_seen", text="Done.", text_open=False))
    assert run(step, [TextDelta("Done.")]) == []
    assert step.content() == [{"type": "text", "text": "Done."}]


def test_a_tool_call_seen_half_streamed_goes_on_under_its_id_when_the_model_makes_it_again():
    seen = CarriedCall(id="call_seen", name="calc", arguments='{"expr')
    step = carried_step(Carried(message_id="msg_seen", calls=[seen]))
    events = run(step, [ToolCallDelta(index=0, id="call_new", name="calc", arguments='{"ex'),
                        ToolCallDelta(index=0, id=None, name=None, arguments='pr": "1+1"}')])
    assert [(e["type"], e.get("delta")) for e in events] == [("TOOL_CALL_ARGS", '": "1+1"}'), ("TOOL_CALL_END", None)]
    assert {e["toolCallId"] for e in events} == {"call_seen"}
    assert step.content() == [{"type": "tool_use", "id": "call_seen", "name": "calc", "input": {"expr": "1+1"}}]


def test_a_tool_call_made_with_other_arguments_shows_under_a_new_id_and_the_seen_one_is_left_unended():
    seen = CarriedCall(id="call_seen", name="calc", arguments='{"expr": "2')
    step = carried_step(Carried(message_id="msg_seen", calls=[seen]))
    events = run(step, [ToolCallDelta(index=0, id="call_new", name="calc", arguments='{"expr": "3*3"}')])
    (start,) = [e for e in events if e["type"] == "TOOL_CALL_START"]
    assert start["toolCallId"] not in ("call_seen",) and start["parentMessageId"] == "msg_seen"
    assert all(e.get("toolCallId") != "call_seen" for e in events)
    assert [e["type"] for e in events] == ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
    assert step.content()[0]["id"] == start["toolCallId"]


def test_a_tool_call_seen_whole_and_ended_is_not_ended_twice():
    seen = CarriedCall(id="call_seen", name="calc", arguments='{"expr": "1"}', ended=True)
    step = carried_step(Carried(message_id="msg_seen", calls=[seen]))
    assert run(step, [ToolCallDelta(index=0, id="call_new", name="calc", arguments='{"expr": "1"}')]) == []
    assert step.content() == [{"type": "tool_use", "id": "call_seen", "name": "calc", "input": {"expr": "1"}}]


def test_reasoning_seen_is_kept_before_the_new_reasoning():
    step = carried_step(Carried(reasoning=["First thoughts"]))
    assert step.message_id == "msg_new"  # no message seen yet: the step's own id
    assert step.reasoning.texts() == ["First thoughts"]


def test_echo_holds_while_undecided_and_gives_back_a_shorter_output_at_the_end():
    echo = Echo("abcdef")
    assert echo.feed("abc") is None and echo.flush() == "abc" and echo.matched is False
    echo = Echo("abc")
    assert echo.feed("ab") is None and echo.feed("cd") == "d" and echo.matched is True
    assert Echo("").feed("x") == "x"
