"""Generative UI components over real HTTP (docs/protocol.md#components): a component is offered to the model as a tool,
its props stream as JSON Patch operations in `tambo.component.*` events, and the assistant message keeps a
component block with the final props and an empty state.

Oracle for "the props known at every step": `clientsdk.partial_json.parse_partial` of the arguments text
received so far (its own property tests live in test_partial_json.py).
"""
from __future__ import annotations

import json

import jsonpatch
import pytest

from tests.conftest import Api
from tests.support.fake_openai import Text, ToolCall, ToolCalls
from tests.support.run_requests import run, text_of
from tests.support.sse import types
from clientsdk.partial_json import parse_partial

pytestmark = pytest.mark.django_db(transaction=True)

CARD_SCHEMA = {
    "type": "object",
    "properties": {
        "title": {"type": "string"},
        "author": {"type": "object", "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        }},
        "items": {"type": "array", "items": {"type": "object", "properties": {
            "label": {"type": "string"}, "value": {"type": "number"}}}},
    },
    "required": ["title"],
}
CARD = {"name": "Card", "description": "A card with a title, an author and items.", "propsSchema": CARD_SCHEMA}
BADGE = {"name": "Badge", "description": "A small badge.",
         "propsSchema": {"type": "object", "properties": {"label": {"type": "string", "default": "new"},
                                                          "color": {"type": "string", "examples": ["green"]}}}}
PROPS = {"title": "Quarterly report — \u00e9t\u00e9", "author": {"name": "Ann \"Q\" Lee", "tags": ["finance", "q3"]},
         "items": [{"label": "revenue", "value": 12.5}, {"label": "costs", "value": -3}, {"label": "net", "value": 9.5}]}


def custom(events: list[dict], name: str) -> list[dict]:
    return [e["value"] for e in events if e["type"] == "CUSTOM" and e["name"] == name]


def applied_props(events: list[dict], component_id: str) -> list[dict]:
    """The props after each props_delta of one component, applying every operation list in order to {}."""
    doc: dict = {}
    seen = []
    for value in custom(events, "tambo.component.props_delta"):
        if value["componentId"] != component_id:
            continue
        assert value["operations"], "a props_delta event with no operations"
        doc = jsonpatch.apply_patch(doc, value["operations"])
        seen.append(doc)
    return seen


def known_props(fragments: list[str]) -> list[dict]:
    """The distinct props a client can know after each fragment, then the final props."""
    known, previous, text = [], {}, ""
    for fragment in fragments:
        text += fragment
        value = parse_partial(text)
        if isinstance(value, dict) and value != previous:
            known.append(value)
            previous = value
    final = json.loads(text)
    if final != previous:
        known.append(final)
    return known


def stored_components(api: Api, thread_id: str) -> list[tuple[str, dict]]:
    """(message id, component block) for every component on the thread, as GET shows them."""
    messages = api.get(f"/v1/threads/{thread_id}").json()["messages"]
    return [(m["id"], b) for m in messages for b in m["content"] if b["type"] == "component"]


# --- Offline model -----------------------------------------------------------------------------------

def test_the_offline_model_renders_a_component_with_streamed_nested_props(api):
    thread_id, events = run(api, f"Show me a Card {json.dumps(PROPS)}", availableComponents=[CARD])
    names = types(events)
    assert names[0] == "RUN_STARTED" and names[-1] == "RUN_FINISHED", names
    assert not [n for n in names if n.startswith("TOOL_CALL")], names
    [start] = custom(events, "tambo.component.start")
    assert start["componentName"] == "Card"
    assert start["componentId"].startswith("comp_") and start["messageId"].startswith("msg_")
    steps = applied_props(events, start["componentId"])
    assert len(steps) > 1, "the props should stream in several deltas"
    assert steps[-1] == PROPS
    # Every intermediate value is what some prefix of the arguments determines, and the props only grow.
    text = json.dumps(PROPS)
    possible = [parse_partial(text[:i]) for i in range(len(text) + 1)]
    for props in steps:
        assert props in possible, props
    assert [possible.index(p) for p in steps] == sorted(possible.index(p) for p in steps)
    assert custom(events, "tambo.component.end") == [{"componentId": start["componentId"]}]
    assert names.index("tambo.component.start") < names.index("tambo.component.props_delta")
    assert len(names) - 1 - names[::-1].index("tambo.component.props_delta") < names.index("tambo.component.end")
    [(message_id, block)] = stored_components(api, thread_id)
    assert message_id == start["messageId"]
    assert {k: block[k] for k in ("type", "id", "name", "props", "state")} == {
        "type": "component", "id": start["componentId"], "name": "Card", "props": PROPS, "state": {}}
    # The model goes on in the same run once the component is shown (the offline model says so plainly).
    assert text_of(events) == "Here is the Card."


def test_a_component_without_props_in_the_text_gets_its_schema_defaults(api):
    thread_id, events = run(api, "Give me a Badge please", availableComponents=[CARD, BADGE])
    [start] = custom(events, "tambo.component.start")
    assert start["componentName"] == "Badge"
    assert applied_props(events, start["componentId"])[-1] == {"label": "new", "color": "green"}
    [(_, block)] = stored_components(api, thread_id)
    assert block["props"] == {"label": "new", "color": "green"}


@pytest.mark.both_dbs
def test_two_components_in_one_response(api):
    thread_id, events = run(api, 'A Badge and a Card {"title": "T", "label": "L"}',
                            availableComponents=[CARD, BADGE])
    starts = custom(events, "tambo.component.start")
    assert [s["componentName"] for s in starts] == ["Badge", "Card"]
    assert len({s["componentId"] for s in starts}) == 2
    assert starts[0]["messageId"] == starts[1]["messageId"]
    assert {e["componentId"] for e in custom(events, "tambo.component.end")} == {s["componentId"] for s in starts}
    for s in starts:
        assert applied_props(events, s["componentId"])[-1] == {"title": "T", "label": "L"}
    stored = stored_components(api, thread_id)
    assert [(b["id"], b["name"], b["state"]) for _, b in stored] == [
        (s["componentId"], s["componentName"], {}) for s in starts]


def test_a_component_name_is_not_offered_when_the_request_does_not_list_it(api):
    _, events = run(api, f"Show me a Card {json.dumps(PROPS)}")
    assert custom(events, "tambo.component.start") == []
    assert "I was offered no tools." in text_of(events)


# --- The openai provider against the scripted fake ------------------------------------------------------

def split_mid_token(text: str, sizes=(3, 1, 7, 2, 5)) -> list[str]:
    """Fragments of uneven sizes, so they cut keys, strings, numbers, escapes and literals."""
    fragments, i, n = [], 0, 0
    while i < len(text):
        size = sizes[n % len(sizes)]
        fragments.append(text[i:i + size])
        i, n = i + size, n + 1
    return fragments


def test_props_streamed_by_a_real_provider_match_what_is_known_after_every_fragment(fake, oapi):
    props = {**PROPS, "flag": True, "nothing": None, "big": 12345.678e2}
    fragments = split_mid_token(json.dumps(props))
    before = len(fake.requests)
    fake.script(ToolCalls([ToolCall("show_component_Card", fragments, id="call_card")]),
                Text(["Here is ", "your card."]))
    thread_id, events = run(oapi, "Show me the report", availableComponents=[CARD])
    names = types(events)
    assert names[-1] == "RUN_FINISHED", names
    [start] = custom(events, "tambo.component.start")
    assert start["componentName"] == "Card" and start["componentId"].startswith("comp_")
    # Fragments read together make one patch (providers/batching.py): the props shown are some of those
    # known after each fragment, in order, the whole props last.
    known = iter(known_props(fragments))
    assert all(step in known for step in applied_props(events, start["componentId"]))
    assert applied_props(events, start["componentId"])[-1] == props
    # Component first, then the model's text in the same run.
    assert names.index("tambo.component.end") < names.index("TEXT_MESSAGE_START")
    assert text_of(events) == "Here is your card."
    # The model was offered the component as a tool with its props schema, and then told it is shown.
    offered = {t["function"]["name"]: t["function"] for t in fake.requests[before].body["tools"]}
    assert offered["show_component_Card"]["parameters"] == CARD_SCHEMA
    second = fake.requests[before + 1].body["messages"]
    assert second[-2]["role"] == "assistant"
    assert second[-2]["tool_calls"][0]["id"] == "call_card"
    assert json.loads(second[-2]["tool_calls"][0]["function"]["arguments"]) == props
    assert second[-1]["role"] == "tool" and second[-1]["tool_call_id"] == "call_card"
    assert second[-1]["content"] == (f"Component Card ({start['componentId']}) is shown to the user. "
                                     "Its current state: {}")
    messages = oapi.get(f"/v1/threads/{thread_id}").json()["messages"]
    assert [[b["type"] for b in m["content"]] for m in messages] == [["text"], ["component"], ["text"]]
    block = messages[1]["content"][0]
    assert (messages[1]["id"], block["id"], block["props"], block["state"]) == (
        start["messageId"], start["componentId"], props, {})


def test_text_then_a_component_then_another_component_in_one_run(fake, oapi):
    fake.script(
        ToolCalls([ToolCall("show_component_Badge", ['{"lab', 'el": "h', 'ot"}'])], text=["Look", ": "]),
        ToolCalls([ToolCall("show_component_Card", ['{"title"', ': "Se', 'cond"}'])]),
        Text("Done."),
    )
    thread_id, events = run(oapi, "two things", availableComponents=[CARD, BADGE])
    names = types(events)
    assert names[-1] == "RUN_FINISHED", names
    starts = custom(events, "tambo.component.start")
    assert [s["componentName"] for s in starts] == ["Badge", "Card"]
    assert starts[0]["messageId"] != starts[1]["messageId"]
    assert applied_props(events, starts[0]["componentId"])[-1] == {"label": "hot"}
    assert applied_props(events, starts[1]["componentId"])[-1] == {"title": "Second"}
    # The text of step 1 ends before its component starts.
    assert names.index("TEXT_MESSAGE_END") < names.index("tambo.component.start")
    messages = oapi.get(f"/v1/threads/{thread_id}").json()["messages"]
    assert [[b["type"] for b in m["content"]] for m in messages] == [
        ["text"], ["text", "component"], ["component"], ["text"]]
    assert messages[1]["content"][0]["text"] == "Look: "


def test_a_component_call_whose_arguments_are_not_json_keeps_the_props_seen_and_the_run_finishes(fake, oapi):
    fake.script(ToolCalls([ToolCall("show_component_Card", ['{"title": "Half', '"', ', "items": [tr'])]),
                Text("Sorry."))
    thread_id, events = run(oapi, "broken", availableComponents=[CARD])
    assert types(events)[-1] == "RUN_FINISHED"
    [start] = custom(events, "tambo.component.start")
    seen = {"title": "Half", "items": []}  # what the text determined before it broke off
    assert applied_props(events, start["componentId"])[-1] == seen
    [(_, block)] = stored_components(oapi, thread_id)
    assert block["props"] == seen
