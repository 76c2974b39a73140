"""The one partial-JSON parser (`clientsdk.partial_json`), used by the server's props streaming and
the client's snapshot of streamed tool-call arguments: its promise on every prefix of many
documents, its corners, and the cases of both former parsers, including those where they disagreed."""
import json
import math
import random
from typing import Any

import pytest

from clientsdk import ThreadSnapshot, accumulate, parse_event
from clientsdk.partial_json import PartialParser, parse_partial
from tests.tools.jsondocs import HAND_WRITTEN, random_documents

DOCUMENTS = HAND_WRITTEN + random_documents(seed=20261130, count=150)


def canonical(value: Any) -> str:
    """A form that tells 1, 1.0 and True apart (== does not) and treats NaN as equal to itself."""
    return json.dumps(value, sort_keys=True)


def is_contained(partial: Any, final: Any) -> bool:
    """Whether `partial` could be what a prefix of `final`'s text determines."""
    if isinstance(partial, dict):
        return isinstance(final, dict) and all(
            k in final and is_contained(v, final[k]) for k, v in partial.items()
        )
    if isinstance(partial, list):
        if not isinstance(final, list) or len(partial) > len(final):
            return False
        # Only the last element may still be growing; every earlier one is finished.
        finished = all(canonical(p) == canonical(f) for p, f in zip(partial[:-1], final))
        return finished and (not partial or is_contained(partial[-1], final[len(partial) - 1]))
    if isinstance(partial, str):
        return isinstance(final, str) and final.startswith(partial)
    return canonical(partial) == canonical(final)


@pytest.mark.parametrize("text", DOCUMENTS)
def test_every_prefix_parses_to_a_value_contained_in_the_final_one(text):
    final = json.loads(text)
    previous = None
    for end in range(len(text) + 1):
        partial = parse_partial(text[:end])
        if partial is None:
            continue
        assert is_contained(partial, final), (text[:end], partial)
        # Knowledge only grows: what a shorter prefix showed is kept by a longer one.
        if previous is not None:
            assert is_contained(previous, partial), (text[:end], previous, partial)
        previous = partial


@pytest.mark.parametrize("text", DOCUMENTS)
def test_the_complete_text_parses_like_json_loads(text):
    assert canonical(parse_partial(text, complete=True)) == canonical(json.loads(text))
    if not text.rstrip()[-1].isdigit():
        # Without `complete`, only a trailing number is held back.
        assert canonical(parse_partial(text)) == canonical(json.loads(text))


def test_the_random_documents_cover_the_interesting_shapes():
    joined = "".join(DOCUMENTS)
    assert all(marker in joined for marker in ['\\"', "\\\\", "\\u", "e-", "{", "[", "😀", ": null"])
    values = [json.loads(doc) for doc in DOCUMENTS]
    assert len({canonical(v) for v in values}) > 150
    nested = [v for v in values if isinstance(v, dict) and any(isinstance(x, (dict, list)) for x in v.values())]
    assert len(nested) > 40


@pytest.mark.parametrize("text", ["", "   ", "-", "t", "tru", "n", "f", "12", "-1.", "1e", "NaN"[:2]])
def test_it_returns_none_until_something_is_known(text):
    assert parse_partial(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{", {}),
        ("[", []),
        ('"', ""),
        ('"hel', "hel"),
        ('{"a": "hel', {"a": "hel"}),
        ('{"a": [1, {"b": [', {"a": [1, {"b": []}]}),
        ('[[["x', [[["x"]]]),
        ('{"a": {"b": {}', {"a": {"b": {}}}),
    ],
)
def test_it_closes_open_strings_arrays_and_objects(text, expected):
    assert parse_partial(text) == expected


@pytest.mark.parametrize("text", ['{"ke', '{"key"', '{"key" ', '{"key":', '{"key": ', '{"a": 1, "ke'])
def test_it_drops_a_key_without_a_value(text):
    expected = {"a": 1} if text.startswith('{"a"') else {}
    assert parse_partial(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("[1", []),
        ("[12", []),
        ("[1.", []),
        ("[1.5", []),
        ("[1.5e", []),
        ("[1.5e-", []),
        ("[1.5e-3", []),
        ("[1.5e-3 ", [0.0015]),
        ("[1.5e-3,", [0.0015]),
        ("[1.5e-3]", [0.0015]),
        ('{"n": -7', {}),
        ('{"n": -7}', {"n": -7}),
        ('{"n": -7\n', {"n": -7}),
    ],
)
def test_it_holds_back_a_number_until_a_delimiter_follows(text, expected):
    assert canonical(parse_partial(text)) == canonical(expected)


def test_complete_accepts_a_trailing_number():
    assert parse_partial("42") is None
    assert parse_partial("42", complete=True) == 42
    assert parse_partial("-0.25", complete=True) == -0.25
    # A number that is not finished stays out even at the end of the document.
    assert parse_partial("[1.", complete=True) == []


def test_integers_stay_integers_and_floats_stay_floats():
    value = parse_partial("[1, 1.0, 1e2, 12345678901234567890]")
    assert [type(v) for v in value] == [int, float, float, int]
    assert value[3] == 12345678901234567890


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('[tr', []),
        ('[true', [True]),
        ('[fals', []),
        ('[false', [False]),
        ('{"a": nul', {}),
        ('{"a": null', {"a": None}),
        ('[-Infin', []),
    ],
)
def test_it_keeps_a_literal_only_once_it_is_complete(text, expected):
    assert parse_partial(text) == expected


def test_non_standard_literals_match_json_loads():
    value = parse_partial("[NaN, Infinity, -Infinity]")
    assert math.isnan(value[0]) and value[1:] == [math.inf, -math.inf]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"a\\', "a"),
        ('"a\\n', "a\n"),
        ('"a\\u', "a"),
        ('"a\\u00', "a"),
        ('"a\\u00e', "a"),
        ('"a\\u00e9', "aé"),
        ('"a\\"b', 'a"b'),
        ('{"k\\', {}),
        ('{"k\\u00e9": "v', {"ké": "v"}),
    ],
)
def test_it_drops_a_truncated_escape(text, expected):
    assert parse_partial(text) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('"x\\ud83d', "x"),
        ('"x\\ud83d\\', "x"),
        ('"x\\ud83d\\u', "x"),
        ('"x\\ud83d\\ude0', "x"),
        ('"x\\ud83d\\ude00', "x😀"),
        # Not followed by a low surrogate: json.loads keeps it alone, and so do we.
        ('"x\\ud83d"', "x\ud83d"),
        ('"x\\ud83d\\n', "x\ud83d\n"),
        ('"x\\ud83d\\u0041', "x\ud83dA"),
    ],
)
def test_it_holds_back_a_high_surrogate_until_its_pair_is_known(text, expected):
    assert parse_partial(text) == expected


def test_it_ignores_text_after_a_complete_document():
    assert parse_partial('{"a": 1} trailing {"b"') == {"a": 1}


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("{]", {}),
        ("[1,,2]", [1]),
        ('{"a" 1}', {}),
        ('{"a": 1 "b": 2}', {"a": 1}),
        ("[01]", []),
        ('"bad \\x escape"', "bad "),
        ("@", None),
        ("{1: 2}", {}),
    ],
)
def test_invalid_text_gives_what_was_built_before_the_error(text, expected):
    assert parse_partial(text) == expected


def test_it_never_raises_on_random_garbage():
    rng = random.Random(7)
    alphabet = '{}[]",:\\ u0123456789.eE+-truefalsn\n😀\ud800'
    for _ in range(3000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 30)))
        # Now and then a number longer than Python converts (4,300 digits).
        text += "7" * 4400 * (rng.random() < 0.01)
        parse_partial(text)
        parse_partial(text, complete=True)


def test_an_integer_too_long_for_python_is_dropped_like_invalid_text():
    huge = "9" * 5000
    assert parse_partial(f'{{"a": 1, "b": {huge}, "c": 2}}') == {"a": 1}
    assert parse_partial(f"[{huge}", complete=True) == []


def test_deep_nesting_does_not_hit_the_recursion_limit():
    depth = 50_000
    value = parse_partial("[" * depth)
    for _ in range(depth - 1):
        value = value[0]
    assert value == []


# "Right" for a prefix is what every completion of it agrees on: the value the text so far already
# determines and nothing that could still change (so a bare trailing number is held back, and white
# space inside a string is kept). The former client parser got these wrong; the server's got them
# right. With complete=True (the text is the whole document) a trailing number counts.
@pytest.mark.parametrize(("text", "prefix", "whole"), [
    ("-0.5", None, -0.5),           # may still become -0.55; the client's parser said -0.5
    ("[ 1 ", [1], [1]),              # the space ends the number; the client's parser said []
    ("42", None, 42),               # may still become 420; the client's parser said 42
    ('" ', " ", None),              # an open string keeps its space; the client's parser said ""
    ('["/--Y ', ["/--Y "], ["/--Y "]),
    ('"\\ud83d', "", None),        # a high surrogate waits for its pair; the client's parser kept it alone
    ("1e-0", None, 1.0),
])
def test_the_prefixes_the_two_former_parsers_disagreed_on(text, prefix, whole):
    assert canonical(parse_partial(text)) == canonical(prefix)
    if whole is not None:
        assert canonical(parse_partial(text, complete=True)) == canonical(whole)


# The former client parser's own cases (clientsdk/partial_json.py before there was one parser),
# with the answer the one parser gives and why it differs where it does.
@pytest.mark.parametrize("text, expected", [
    ("", None),
    ("{", {}),
    ('{"a', {}),
    ('{"a": ', {}),
    ('{"a": 1', {}),  # the number may still grow
    ('{"a": 12,', {"a": 12}),
    ('{"a": tr', {}),
    ('{"a": true', {"a": True}),
    ('{"a": "he', {"a": "he"}),
    ('{"a": "x\\', {"a": "x"}),
    ('{"a": "x\\u00e', {"a": "x"}),
    ('{"a": [1, 2', {"a": [1]}),
    ('{"a": {"b": [null, {"c": "d', {"a": {"b": [None, {"c": "d"}]}}),
    ('{"a": 1}', {"a": 1}),
    ("42", None),  # was 42: a prefix "42" may still become 420 (complete=True gives 42)
])
def test_the_former_client_parsers_cases(text, expected):
    assert parse_partial(text) == expected


@pytest.mark.parametrize("text", DOCUMENTS[:40])
def test_both_call_sites_see_the_same_value_for_every_prefix(text):
    """The server feeds fragments to a PartialParser (props streaming); the client folds
    TOOL_CALL_ARGS deltas into its snapshot. Both give parse_partial(prefix) after every fragment."""
    parser = PartialParser()
    snapshot = ThreadSnapshot()
    for raw in [{"type": "RUN_STARTED", "threadId": "t", "runId": "r"},
                {"type": "TOOL_CALL_START", "toolCallId": "c", "toolCallName": "f", "parentMessageId": "m"}]:
        snapshot = accumulate(snapshot, parse_event(json.dumps(raw)))
    for end in range(1, len(text) + 1):
        fragment = text[end - 1:end]
        parser.feed(fragment)
        snapshot = accumulate(snapshot, parse_event(json.dumps(
            {"type": "TOOL_CALL_ARGS", "toolCallId": "c", "delta": fragment})))
        expected = canonical(parse_partial(text[:end]))
        assert canonical(parser.value) == expected
        [call] = snapshot.messages[-1].tool_calls
        assert canonical(call.arguments) == expected
    snapshot = accumulate(snapshot, parse_event(json.dumps({"type": "TOOL_CALL_END", "toolCallId": "c"})))
    [call] = snapshot.messages[-1].tool_calls
    assert canonical(call.arguments) == canonical(json.loads(text))
