"""The limits of core.sanity at their edges, on both of its parsing paths, and the string
limits of the server's request bodies (runs/bodies.py, threads/bodies.py) against the columns that
store those strings."""
from __future__ import annotations

import pytest

from clientsdk import wire
from core.problems import Problem
from core.sanity import MAX_JSON_DEPTH, MAX_SAFE_INTEGER, InputError, loads
from projects import identities
from projects.auth import Principal
from projects.models import Project
from runs import bodies as run_bodies
from runs.models import Run
from threads import bodies as thread_bodies
from threads.models import Message, Thread

# A run of 16 digits sends a body down the exact (standard library) path instead of orjson's.
EXACT_PATH_PADDING = ', "pad": "1234567890123456"'


def _nested(depth: int) -> str:
    return "[" * depth + "]" * depth


@pytest.mark.parametrize("padding", ["", EXACT_PATH_PADDING], ids=["orjson", "exact"])
def test_nesting_up_to_the_limit_is_accepted_and_one_more_level_refused(padding):
    assert loads(f'{{"a": {_nested(MAX_JSON_DEPTH - 1)}{padding}}}')["a"] is not None
    with pytest.raises(InputError) as refused:
        loads(f'{{"a": {_nested(MAX_JSON_DEPTH)}{padding}}}')
    assert refused.value.field.startswith("a")


@pytest.mark.parametrize("padding", ["", EXACT_PATH_PADDING], ids=["orjson", "exact"])
def test_integers_up_to_2_53_minus_1_are_accepted_and_beyond_refused(padding):
    assert loads(f'{{"n": {MAX_SAFE_INTEGER}{padding}}}')["n"] == MAX_SAFE_INTEGER
    assert loads(f'{{"n": -{MAX_SAFE_INTEGER}{padding}}}')["n"] == -MAX_SAFE_INTEGER
    for beyond in (MAX_SAFE_INTEGER + 1, -(MAX_SAFE_INTEGER + 1), 10**30):
        with pytest.raises(InputError) as refused:
            loads(f'{{"n": {beyond}{padding}}}')
        assert refused.value.field == "n"


def test_floats_with_many_digits_are_still_floats():
    assert loads('{"x": 0.12345678901234567890, "y": 1e300}') == {"x": 0.12345678901234568, "y": 1e300}


def test_strings_with_paired_surrogates_and_control_characters_other_than_nul_are_accepted():
    assert loads('{"t": "\\ud83d\\ude00 \\u0001 \\t"}') == {"t": "\U0001F600 \x01 \t"}


def test_a_body_that_is_not_utf8_is_refused_as_the_body():
    with pytest.raises(InputError) as refused:
        loads(b'{"t": "\xff"}')
    assert refused.value.field == "body"


def _max_length(model: type, field: str) -> int:
    schema = model.model_json_schema(by_alias=False)["properties"][field]
    return next(option["maxLength"] for option in schema.get("anyOf", [schema]) if "maxLength" in option)


@pytest.mark.parametrize(("model", "field", "column"), [
    (run_bodies.CreateRunBody, "model", Run._meta.get_field("model")),
    (run_bodies.CreateRunBody, "previous_run_id", Run._meta.get_field("id")),
    (run_bodies.CreateThreadWithRunBody, "model", Run._meta.get_field("model")),
    (thread_bodies.UpdateThreadBody, "name", Thread._meta.get_field("name")),
    (run_bodies.InToolResultBlock, "tool_use_id", Message._meta.get_field("tool_call_id")),
])
def test_a_string_field_has_the_length_limit_of_its_column(model, field, column):
    assert _max_length(model, field) == column.max_length


def test_the_user_key_fits_its_column_with_any_identity_prefix():
    principal = Principal(project=Project(name="p"))
    limit = identities.USER_KEY_MAX_LENGTH
    assert len(identities.token_user("u" * limit)) <= Thread._meta.get_field("user_key").max_length
    assert principal.user_key_checked("u" * limit) == "u" * limit
    with pytest.raises(Problem):
        principal.user_key_checked("u" * (limit + 1))
