import json
import random

import jsonpatch
import pytest

from tests.tools.jsondocs import HAND_WRITTEN, random_object_documents
from clientsdk.partial_json import parse_partial
from tools.props_stream import InvalidArguments, PropsStream

OBJECT_DOCUMENTS = [doc for doc in HAND_WRITTEN if doc.lstrip().startswith("{")] + random_object_documents(
    seed=4330, count=40
)


def canonical(value):
    return json.dumps(value, sort_keys=True)


def split_char_by_char(text, rng):
    return list(text)


def split_randomly(text, rng):
    cuts = sorted(rng.sample(range(1, len(text)), k=min(len(text) - 1, rng.randint(1, 12))))
    return [text[a:b] for a, b in zip([0, *cuts], [*cuts, len(text)])]


def split_in_model_sized_tokens(text, rng):
    fragments, start = [], 0
    while start < len(text):
        size = rng.randint(1, 6)
        fragments.append(text[start : start + size])
        start += size
    return fragments


def stream_and_check(fragments):
    """Feed the fragments, applying every emitted patch as a client would; check the invariant."""
    stream = PropsStream()
    client_view = {}
    text = ""
    for fragment in fragments:
        operations = stream.feed(fragment)
        text += fragment
        client_view = jsonpatch.apply_patch(client_view, operations)
        known = parse_partial(text)
        assert canonical(client_view) == canonical(stream.props), text
        if isinstance(known, dict):
            assert canonical(client_view) == canonical(known), text
    final, operations = stream.finish()
    client_view = jsonpatch.apply_patch(client_view, operations)
    assert canonical(final) == canonical(json.loads(text))
    assert canonical(client_view) == canonical(final)
    return final


@pytest.mark.parametrize("splitter", [split_char_by_char, split_randomly, split_in_model_sized_tokens])
@pytest.mark.parametrize("text", OBJECT_DOCUMENTS)
def test_applying_every_patch_in_order_gives_the_props_known_at_every_step(text, splitter):
    stream_and_check(splitter(text, random.Random(text)))


def test_props_appear_as_soon_as_they_are_certain():
    stream = PropsStream()
    assert stream.feed('{"title": "He') == [{"op": "add", "path": "/title", "value": "He"}]
    assert stream.feed("llo") == [{"op": "replace", "path": "/title", "value": "Hello"}]
    assert stream.feed('", "count": 1') == []  # the number may still grow
    assert stream.feed("2") == []
    assert stream.feed(", ") == [{"op": "add", "path": "/count", "value": 12}]
    assert stream.feed('"items": ') == []  # a key without a value is not shown
    assert stream.feed("[") == [{"op": "add", "path": "/items", "value": []}]
    assert stream.feed("{") == [{"op": "add", "path": "/items/0", "value": {}}]
    assert stream.props == {"title": "Hello", "count": 12, "items": [{}]}


def test_a_fragment_that_adds_nothing_emits_no_operations():
    stream = PropsStream()
    assert stream.feed("") == []
    assert stream.feed("  ") == []
    assert stream.feed("{") == []  # {} is where the client starts
    assert stream.feed('"a') == []
    assert stream.feed('": t') == []
    assert stream.feed("ru") == []
    assert stream.feed("e") == [{"op": "add", "path": "/a", "value": True}]
    assert stream.feed(" ") == []


def test_keys_are_escaped_in_json_pointers():
    stream = PropsStream()
    operations = stream.feed('{"a/b": 1, "m~n": 2, "": 3}')
    assert sorted(operations, key=lambda op: op["path"]) == [
        {"op": "add", "path": "/", "value": 3},
        {"op": "add", "path": "/a~1b", "value": 1},
        {"op": "add", "path": "/m~0n", "value": 2},
    ]


def test_a_trailing_number_reaches_the_client_with_the_closing_brace():
    stream = PropsStream()
    assert stream.feed('{"n": 4') == []
    assert stream.feed("}") == [{"op": "add", "path": "/n", "value": 4}]
    assert stream.finish() == ({"n": 4}, [])


def test_finish_after_everything_was_streamed_emits_no_operations():
    stream = PropsStream()
    stream.feed('{"a": [1, 2]}')
    assert stream.finish() == ({"a": [1, 2]}, [])


def test_finish_takes_empty_arguments_as_an_empty_object():
    assert PropsStream().finish() == ({}, [])


@pytest.mark.parametrize("text", ['{"a": 1', '{"a": }', "{'a': 1}", '{"a": 1} x'])
def test_finish_rejects_arguments_that_are_not_valid_json(text):
    stream = PropsStream()
    stream.feed(text)
    with pytest.raises(InvalidArguments, match="not valid JSON"):
        stream.finish()


@pytest.mark.parametrize("text", ["[1, 2]", '"text"', "3", "null"])
def test_finish_rejects_arguments_that_are_not_an_object(text):
    stream = PropsStream()
    assert stream.feed(text) == []
    with pytest.raises(InvalidArguments, match="must be a JSON object"):
        stream.finish()


def test_invalid_arguments_is_a_value_error():
    assert issubclass(InvalidArguments, ValueError)


def test_feeding_after_finish_is_an_error():
    stream = PropsStream()
    stream.feed("{}")
    stream.finish()
    with pytest.raises(RuntimeError):
        stream.feed("{")


def test_the_caller_cannot_corrupt_the_next_diff_by_mutating_what_it_got():
    stream = PropsStream()
    operations = stream.feed('{"items": [{"a": "x')
    operations[0]["value"].append("mutated")
    stream.props["items"].append("mutated too")
    client_view = jsonpatch.apply_patch({}, [{"op": "add", "path": "/items", "value": [{"a": "x"}]}])
    client_view = jsonpatch.apply_patch(client_view, stream.feed('y"}, 2]}'))
    assert client_view == {"items": [{"a": "xy"}, 2]}
