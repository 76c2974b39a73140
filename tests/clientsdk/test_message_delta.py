"""combine_delta: how streamed deltas fold into the assistant message."""

import copy

from clientsdk.message import combine_delta, filter_message_fields


def test_it_concatenates_strings():
    target = {"content": "Hel"}
    assert combine_delta(target, {"content": "lo"}) == {"content": "Hello"}


def test_it_returns_the_target_it_mutated():
    target = {}
    assert combine_delta(target, {"content": "x"}) is target


def test_it_takes_the_source_value_for_missing_and_falsy_targets():
    target = {"content": "", "refusal": None, "n": 0, "flag": False, "calls": [], "meta": {}}
    source = {"content": "a", "refusal": "no", "n": 3, "flag": True, "calls": [1], "meta": {"k": 1}, "new": "v"}
    assert combine_delta(target, source) == source


def test_it_never_doubles_role():
    message = {"role": "", "content": ""}
    combine_delta(message, {"role": "assistant", "content": "Hi"})
    combine_delta(message, {"role": "assistant", "content": "!"})
    assert message == {"role": "assistant", "content": "Hi!"}


def test_it_keeps_the_first_type():
    call = {"type": "function"}
    combine_delta(call, {"type": "function"})
    assert call["type"] == "function"


def test_it_merges_nested_dicts_recursively():
    target = {"function": {"name": "get_weather", "arguments": '{"ci'}}
    combine_delta(target, {"function": {"arguments": 'ty": "Oslo"}'}})
    assert target == {"function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}


def test_it_merges_tool_call_lists_by_index():
    message = {"tool_calls": [
        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "a", "arguments": ""}},
    ]}
    combine_delta(message, {"tool_calls": [
        {"index": 1, "id": "call_b", "type": "function", "function": {"name": "b", "arguments": "{}"}},
    ]})
    combine_delta(message, {"tool_calls": [{"index": 0, "function": {"arguments": '{"x":1}'}}]})
    assert message["tool_calls"] == [
        {"index": 0, "id": "call_a", "type": "function", "function": {"name": "a", "arguments": '{"x":1}'}},
        {"index": 1, "id": "call_b", "type": "function", "function": {"name": "b", "arguments": "{}"}},
    ]


def test_it_places_sparse_indexes_with_holes_and_keeps_merging_after_them():
    message = {"tool_calls": [{"index": 2, "id": "c2", "function": {"arguments": "a"}}]}
    combine_delta(message, {"tool_calls": [{"index": 3, "id": "c3"}]})
    assert message["tool_calls"] == [None, None, {"index": 2, "id": "c2", "function": {"arguments": "a"}},
                                     {"index": 3, "id": "c3"}]
    # 0.4 concatenated here because the holes carried no index; the delta must land on index 2.
    combine_delta(message, {"tool_calls": [{"index": 2, "function": {"arguments": "b"}}]})
    assert len(message["tool_calls"]) == 4
    assert message["tool_calls"][2]["function"]["arguments"] == "ab"


def test_it_concatenates_lists_without_indexes():
    target = {"parts": [{"type": "text", "text": "a"}]}
    combine_delta(target, {"parts": [{"type": "text", "text": "b"}]})
    assert target["parts"] == [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]


def test_it_concatenates_when_only_some_items_have_an_index():
    target = {"items": [{"index": 0}]}
    combine_delta(target, {"items": [{"name": "x"}]})
    assert target["items"] == [{"index": 0}, {"name": "x"}]


def test_it_keeps_the_target_for_mismatched_or_scalar_pairs():
    target = {"n": 1, "content": "text", "obj": {"a": 1}, "flag": True}
    combine_delta(target, {"n": 2, "content": {"x": 1}, "obj": "str", "flag": False})
    assert target == {"n": 1, "content": "text", "obj": {"a": 1}, "flag": True}


def test_it_does_not_mutate_the_source():
    source = {"tool_calls": [{"index": 0, "id": "c", "function": {"name": "f", "arguments": "{"}}]}
    snapshot = copy.deepcopy(source)
    message = {}
    combine_delta(message, source)
    combine_delta(message, {"tool_calls": [{"index": 0, "function": {"arguments": "}"}}]})
    assert source == snapshot
    assert message["tool_calls"][0]["function"]["arguments"] == "{}"


def test_filter_applies_keep_list_then_drop_list():
    message = {"role": "user", "content": "hi", "metadata": {}, "state": {}, "loading": True}
    assert filter_message_fields(message, None, ["state", "metadata", "loading"]) == {"role": "user", "content": "hi"}
    assert filter_message_fields(message, ["role", "state"], ["state"]) == {"role": "user"}
    assert filter_message_fields(message) == message
