"""The pure accumulator, fed with recorded wire event sequences."""
from __future__ import annotations

import copy
import json

import pytest

from clientsdk import ThreadSnapshot, accumulate, parse_event


def fold(events: list[dict], snapshot: ThreadSnapshot | None = None) -> list[ThreadSnapshot]:
    """Fold wire events, checking purity at every step; return every intermediate snapshot."""
    snapshots = [snapshot or ThreadSnapshot()]
    for raw in events:
        event = parse_event(json.dumps(raw))
        before_snapshot = copy.deepcopy(snapshots[-1])
        before_event = event.model_dump()
        after = accumulate(snapshots[-1], event)
        assert snapshots[-1] == before_snapshot, f"accumulate mutated the snapshot on {raw['type']}"
        assert event.model_dump() == before_event, f"accumulate mutated the event {raw['type']}"
        snapshots.append(after)
    return snapshots


START = {"type": "RUN_STARTED", "threadId": "thr_1", "runId": "run_1", "timestamp": 1}
FINISH = {"type": "RUN_FINISHED", "threadId": "thr_1", "runId": "run_1", "timestamp": 2}

TEXT_RUN = [
    START,
    {"type": "TEXT_MESSAGE_START", "messageId": "msg_a", "role": "assistant"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_a", "delta": "Hel"},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_a", "delta": "lo, "},
    {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_a", "delta": "world"},
    {"type": "TEXT_MESSAGE_END", "messageId": "msg_a"},
    FINISH,
]

TOOL_RUN = [
    START,
    {"type": "TOOL_CALL_START", "toolCallId": "call_1", "toolCallName": "weather", "parentMessageId": "msg_b"},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": '{"ci'},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": 'ty": "Par'},
    {"type": "TOOL_CALL_ARGS", "toolCallId": "call_1", "delta": 'is", "days": 3}'},
    {"type": "TOOL_CALL_END", "toolCallId": "call_1"},
    {"type": "CUSTOM", "name": "tambo.run.awaiting_input",
     "value": {"pendingToolCalls": [{"toolCallId": "call_1", "toolName": "weather",
                                     "arguments": '{"city": "Paris", "days": 3}'}]}},
    {**FINISH, "outcome": {"type": "success", "pendingToolCallIds": ["call_1"]}},
]

COMPONENT_RUN = [
    START,
    {"type": "CUSTOM", "name": "tambo.component.start",
     "value": {"messageId": "msg_c", "componentId": "comp_1", "componentName": "Card"}},
    {"type": "CUSTOM", "name": "tambo.component.props_delta",
     "value": {"componentId": "comp_1", "operations": [{"op": "add", "path": "/title", "value": "Wea"}]}},
    {"type": "CUSTOM", "name": "tambo.component.props_delta",
     "value": {"componentId": "comp_1", "operations": [
         {"op": "replace", "path": "/title", "value": "Weather"},
         {"op": "add", "path": "/items", "value": [{"day": 1}]}]}},
    {"type": "CUSTOM", "name": "tambo.component.props_delta",
     "value": {"componentId": "comp_1", "operations": [{"op": "add", "path": "/items/-", "value": {"day": 2}}]}},
    {"type": "CUSTOM", "name": "tambo.component.end", "value": {"componentId": "comp_1"}},
    FINISH,
]


def test_it_folds_streamed_text_deltas_together():
    snaps = fold(TEXT_RUN)
    assert snaps[3].messages[0].text == "Hel" and snaps[3].messages[0].streaming
    final = snaps[-1]
    assert final.thread_id == "thr_1" and final.run_id == "run_1"
    assert final.status == "finished"
    assert [(m.id, m.role, m.text, m.streaming) for m in final.messages] == [("msg_a", "assistant", "Hello, world", False)]
    assert final.last_text == "Hello, world"


def test_it_marks_the_run_running_between_start_and_finish():
    snaps = fold(TEXT_RUN)
    assert snaps[0].status == "idle"
    assert {s.status for s in snaps[1:-1]} == {"running"}


def test_it_parses_tool_arguments_while_they_stream_and_when_complete():
    snaps = fold(TOOL_RUN)
    calls = [s.tool_call("call_1") for s in snaps[2:6]]
    assert calls[0].arguments is None or calls[0].arguments == {}
    assert calls[1].arguments == {}  # '{"ci' has no complete key yet
    assert calls[2].arguments == {"city": "Par"}
    assert calls[3].arguments == {"city": "Paris", "days": 3} and not calls[3].complete
    done = snaps[6].tool_call("call_1")
    assert done.complete and done.name == "weather" and done.arguments_text == '{"city": "Paris", "days": 3}'
    assert snaps[6].messages[0].id == "msg_b"


def test_it_records_pending_tool_calls_and_ends_awaiting_input():
    final = fold(TOOL_RUN)[-1]
    assert final.status == "awaiting_input"
    [pending] = final.pending_tool_calls
    assert (pending.tool_call_id, pending.tool_name) == ("call_1", "weather")
    assert pending.parsed_arguments() == {"city": "Paris", "days": 3}


def test_a_new_run_clears_the_pending_calls_and_keeps_the_history():
    paused = fold(TOOL_RUN)[-1]
    cont = fold([
        {**START, "runId": "run_2"},
        {"type": "TOOL_CALL_RESULT", "messageId": "client:call_1", "toolCallId": "call_1", "content": "sunny", "role": "tool"},
        {"type": "TEXT_MESSAGE_START", "messageId": "msg_d", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_d", "delta": "It is sunny."},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg_d"},
        {**FINISH, "runId": "run_2"},
    ], paused)[-1]
    assert cont.run_id == "run_2" and cont.status == "finished" and cont.pending_tool_calls == ()
    assert [m.id for m in cont.messages] == ["msg_b", "msg_d"]
    assert cont.tool_call("call_1").result == "sunny"


def test_it_attaches_server_tool_results_to_their_call():
    final = fold(TOOL_RUN[:6] + [
        {"type": "TOOL_CALL_RESULT", "messageId": "msg_r", "toolCallId": "call_1",
         "content": [{"type": "text", "text": "22"}, {"type": "text", "text": "C"}], "role": "tool"},
    ])[-1]
    call = final.tool_call("call_1")
    assert call.result == "22C" and not call.is_error


def test_it_applies_component_props_patches_in_order():
    snaps = fold(COMPONENT_RUN)
    assert snaps[2].component("comp_1").props == {}
    assert snaps[3].component("comp_1").props == {"title": "Wea"}
    assert snaps[4].component("comp_1").props == {"title": "Weather", "items": [{"day": 1}]}
    final = snaps[-1].component("comp_1")
    assert final.props == {"title": "Weather", "items": [{"day": 1}, {"day": 2}]}
    assert final.name == "Card" and not final.streaming
    assert snaps[-1].messages[0].id == "msg_c"


def test_a_patch_that_does_not_apply_leaves_the_props_unchanged():
    snaps = fold(COMPONENT_RUN[:3] + [
        {"type": "CUSTOM", "name": "tambo.component.props_delta",
         "value": {"componentId": "comp_1", "operations": [{"op": "replace", "path": "/missing/x", "value": 1}]}},
    ])
    assert snaps[-1].component("comp_1").props == {"title": "Wea"}


def test_a_run_error_records_the_error_and_stops_streaming():
    final = fold(TEXT_RUN[:3] + [
        {"type": "RUN_ERROR", "message": "The model failed", "code": "LLM_SERVER_ERROR",
         "category": "server_error", "isRetryable": True},
    ])[-1]
    assert final.status == "error"
    assert final.error.code == "LLM_SERVER_ERROR" and final.error.message == "The model failed"
    assert final.error.category == "server_error" and final.error.is_retryable is True
    assert not final.messages[0].streaming and final.messages[0].text == "Hel"


def test_a_cancelled_run_is_marked_cancelled():
    final = fold(TEXT_RUN[:3] + [{"type": "RUN_ERROR", "message": "Run cancelled", "code": "CANCELLED"}])[-1]
    assert final.status == "cancelled" and final.error.code == "CANCELLED"
    assert final.error.is_retryable is False


def test_events_for_unknown_ids_and_unused_events_return_the_same_snapshot():
    snap = fold([START])[-1]
    for raw in [
        {"type": "TOOL_CALL_ARGS", "toolCallId": "nope", "delta": "{}"},
        {"type": "CUSTOM", "name": "tambo.component.props_delta", "value": {"componentId": "nope", "operations": []}},
        {"type": "CUSTOM", "name": "something.else", "value": 1},
        {"type": "STEP_STARTED", "stepName": "x"},
    ]:
        assert accumulate(snap, parse_event(json.dumps(raw))) is snap


@pytest.mark.parametrize("sequence", [TEXT_RUN, TOOL_RUN, COMPONENT_RUN])
def test_folding_twice_from_the_same_start_gives_equal_snapshots(sequence):
    assert fold(sequence)[-1] == fold(sequence)[-1]


def test_a_taken_over_run_shows_the_step_in_flight_carried_on_in_the_same_message():
    """docs/operations.md#takeover: after the takeover the text goes on in the message already seen."""
    events = [
        START,
        {"type": "TEXT_MESSAGE_START", "messageId": "msg_half", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_half", "delta": "Half an ans"},
        {"type": "CUSTOM", "name": "tambo.run.takeover", "value": {"reason": "lease_expired", "takeovers": 1}},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_half", "delta": "wer, whole."},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg_half"},
        FINISH,
    ]
    final = fold(events)[-1]
    assert [(m.id, m.text) for m in final.messages] == [("msg_half", "Half an answer, whole.")]
    assert final.status == "finished"


def test_an_agui_messages_snapshot_replaces_the_messages_folded_so_far():
    """AG-UI's rule for its MESSAGES_SNAPSHOT (an AG-UI agent may send one)."""
    events = [
        START,
        {"type": "TEXT_MESSAGE_START", "messageId": "msg_half", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_half", "delta": "Half an ans"},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg_half"},
        {"type": "CUSTOM", "name": "tambo.run.takeover", "value": {"reason": "lease_expired", "takeovers": 1}},
        {"type": "MESSAGES_SNAPSHOT", "messages": [
            {"id": "msg_user", "role": "user", "content": "hi"},
            {"id": "msg_step", "role": "assistant", "content": None, "toolCalls": [
                {"id": "call_1", "type": "function", "function": {"name": "calculate", "arguments": '{"expression": "1+1"}'}}]},
            {"id": "msg_result", "role": "tool", "toolCallId": "call_1", "content": "2"}]},
        {"type": "TEXT_MESSAGE_START", "messageId": "msg_redone", "role": "assistant"},
        {"type": "TEXT_MESSAGE_CONTENT", "messageId": "msg_redone", "delta": "The answer is 2."},
        {"type": "TEXT_MESSAGE_END", "messageId": "msg_redone"},
        FINISH,
    ]
    final = fold(events)[-1]
    assert [m.id for m in final.messages] == ["msg_user", "msg_step", "msg_redone"]
    (call,) = final.messages[1].tool_calls
    assert (call.name, call.arguments, call.result, call.complete) == ("calculate", {"expression": "1+1"}, "2", True)
    assert final.last_text == "The answer is 2." and final.status == "finished"
