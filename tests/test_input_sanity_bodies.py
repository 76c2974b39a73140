"""Bad values in JSON bodies answer 400 VALIDATION_ERROR naming the field, on every /v1 route that
takes a body; nothing is written, and the thread works as before (issue "Nothing lost, nothing 500").

Each route is tried with every bad value (NUL, a lone surrogate, NaN, ±Infinity, 1e999, a
5,000-digit integer, 2^53, 900 levels of nesting, a NUL key) at every field of its body that
takes it; strings get the string cases.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

import pytest

from tests.conftest import Api
from tests.support.bad_input import BAD_TEXT, BAD_VALUES, DEEP_ARRAY, planted, row_counts, send
from tests.support.problems import assert_problem
from tests.support.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

CARD = {"name": "Card", "description": "A card.",
        "propsSchema": {"type": "object", "properties": {"title": {"type": "string"}}}}


def _text(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


@dataclass(frozen=True)
class Route:
    name: str
    method: str
    path: str  # {thread} and {component} are filled in per test
    body: dict[str, Any]
    text_fields: tuple[str, ...]
    value_fields: tuple[str, ...]
    query: tuple[tuple[str, str], ...] = ()



@pytest.fixture(autouse=True)
def _any_model_name(project):
    """The run bodies name a model of their own: the project lets any name through (`*`; a project
    nobody configured offers the server's own model only, docs/abuse-and-limits.md#safe-defaults)."""
    from projects.config import ProjectSettings, project_settings_save

    project_settings_save(project, ProjectSettings(allowed_models=["*"]))


ROUTES = [
    Route("thread_create", "POST", "/v1/threads",
          {"userKey": "alice", "metadata": {"note": "ok"},
           "initialMessages": [{"role": "user", "content": _text("hi"), "metadata": {"m": 1}}]},
          ("userKey", "initialMessages[0].content[0].text"), ("metadata.note", "initialMessages[0].metadata.m")),
    Route("thread_update", "PATCH", "/v1/threads/{thread}", {"name": "renamed", "metadata": {"note": "ok"}},
          ("name",), ("metadata.note",), query=(("userKey", "alice"),)),
    Route("run_new_thread", "POST", "/v1/threads/runs",
          {"userKey": "alice", "model": "any-model",
           "message": {"role": "user", "content": _text("hi"), "metadata": {"m": 1}, "additionalContext": {"c": 1}},
           "threadMetadata": {"t": 1},
           "thread": {"metadata": {"x": 1}, "initialMessages": [{"role": "user", "content": _text("before"),
                                                                 "metadata": {"i": 1}}]}},
          ("userKey", "model", "message.content[0].text", "thread.initialMessages[0].content[0].text"),
          ("message.metadata.m", "message.additionalContext.c", "threadMetadata.t", "thread.metadata.x",
           "thread.initialMessages[0].metadata.i")),
    Route("run", "POST", "/v1/threads/{thread}/runs",
          {"userKey": "alice", "model": "any-model", "runMetadata": {"r": 1},
           "message": {"role": "user", "content": _text("hi"), "metadata": {"m": 1}, "additionalContext": {"c": 1}}},
          ("userKey", "model", "message.content[0].text"),
          ("message.metadata.m", "message.additionalContext.c", "runMetadata.r")),
    Route("component_state", "POST", "/v1/threads/{thread}/components/{component}/state",
          {"userKey": "alice", "state": {"s": 1}}, ("userKey",), ("state.s",)),
]
CASES = [
    pytest.param(route, field, bad, id=f"{route.name}-{field}-{bad}")
    for route in ROUTES
    for field in route.text_fields + route.value_fields
    for bad in (BAD_TEXT if field in route.text_fields else BAD_VALUES)
]


def _thread_with_component(api: Api) -> tuple[str, str]:
    """A thread holding one Card component, rendered by the offline model: (thread id, component id)."""
    response = api.post("/v1/threads/runs", {"userKey": "alice", "availableComponents": [CARD],
                                             "message": {"role": "user", "content": _text('Show a Card {"title": "Hi"}')}},
                        stream=True)
    assert response.status_code == 200, response.text
    [start] = [e["value"] for e in read_events(response)
               if e["type"] == "CUSTOM" and e["name"] == "tambo.component.start"]
    return response.headers["X-Thread-Id"], start["componentId"]


def _arrange(api: Api, route: Route) -> tuple[str, str, Callable[[], Any]]:
    """(thread id, request path, snapshot of everything the route could change)."""
    if route.name == "component_state":
        thread_id, component_id = _thread_with_component(api)
    else:
        thread_id, component_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"], ""
    path = route.path.format(thread=thread_id, component=component_id)

    def snapshot():
        return row_counts(), api.get(f"/v1/threads/{thread_id}").json()

    return thread_id, path, snapshot


def _assert_still_usable(api: Api, route: Route, path: str, thread_id: str) -> None:
    """The same route with its normal body succeeds, and so does a run on the thread."""
    body = dict(route.body)
    if route.name == "run":
        body["previousRunId"] = api.get(f"/v1/threads/{thread_id}").json().get("lastCompletedRunId")
    response = api.session.request(route.method, api.base_url + path, json=body, params=dict(route.query),
                                   timeout=60)
    assert response.status_code in (200, 201), response.text
    if "runs" in path:
        events = read_events(response)
        assert events[-1]["type"] == "RUN_FINISHED", events[-1]


@pytest.mark.parametrize(("route", "field", "bad"), CASES)
def test_a_bad_value_in_a_body_is_a_400_naming_the_field_and_nothing_is_written(api, route, field, bad):
    thread_id, path, snapshot = _arrange(api, route)
    before = snapshot()

    response = send(api, route.method, path, planted(route.body, field, BAD_VALUES[bad]), **dict(route.query))

    problem = assert_problem(response, 400, "VALIDATION_ERROR")
    # 900 levels are refused at the 65th, below the planted field; a NUL key at its object.
    assert problem["field"] == field or problem["field"].startswith(field + "."), problem
    assert snapshot() == before
    _assert_still_usable(api, route, path, thread_id)


@pytest.mark.parametrize("route", ROUTES, ids=[r.name for r in ROUTES])
def test_a_body_nested_100000_levels_is_a_400_not_a_recursion_error(api, route):
    thread_id, path, snapshot = _arrange(api, route)
    before = snapshot()

    response = send(api, route.method, path, DEEP_ARRAY, **dict(route.query))

    problem = assert_problem(response, 400, "VALIDATION_ERROR", field="body")
    assert "64" in problem["detail"]
    assert snapshot() == before
    _assert_still_usable(api, route, path, thread_id)


@pytest.mark.parametrize("route", [r for r in ROUTES if "model" in r.text_fields], ids=lambda r: r.name)
def test_a_model_name_longer_than_its_column_is_refused_and_one_that_fits_is_taken(api, route):
    thread_id, path, snapshot = _arrange(api, route)
    before = snapshot()

    too_long = api.post(path, {**route.body, "model": "m" * 201})

    assert_problem(too_long, 400, "VALIDATION_ERROR", field="model")
    assert snapshot() == before
    fits = api.post(path, {**route.body, "model": "m" * 200}, stream=True)
    assert fits.status_code == 200, fits.text
    assert read_events(fits)[-1]["type"] == "RUN_FINISHED"


def test_a_json_body_nested_exactly_64_levels_is_accepted(api):
    nested: Any = "deep"
    for _ in range(62):  # the body and `metadata` are the other two levels
        nested = [nested]
    response = api.post("/v1/threads", {"userKey": "alice", "metadata": {"n": nested}})
    assert response.status_code == 201, response.text

    one_more = api.post("/v1/threads", {"userKey": "alice", "metadata": {"n": [nested]}})
    assert_problem(one_more, 400, "VALIDATION_ERROR")


@pytest.mark.both_dbs
def test_a_lone_surrogate_in_run_text_is_refused_before_the_stream_starts(api):
    before = row_counts()
    raw = planted({"userKey": "alice", "message": {"role": "user", "content": _text("hi")}},
                  "message.content[0].text", BAD_TEXT["lone_surrogate"])

    response = send(api, "POST", "/v1/threads/runs", raw)

    assert_problem(response, 400, "VALIDATION_ERROR", field="message.content[0].text")
    assert row_counts() == before
    ok = api.post("/v1/threads/runs", {"userKey": "alice", "message": {"role": "user", "content": _text("hi")}},
                  stream=True)
    assert read_events(ok)[-1]["type"] == "RUN_FINISHED"


@pytest.mark.both_dbs
@pytest.mark.parametrize("route", [r for r in ROUTES if r.name.startswith("run")], ids=lambda r: r.name)
def test_an_empty_previous_run_id_on_a_thread_without_runs_is_refused_not_stored(api, route):
    # Found by bin/fuzz: "" passed the check and failed the foreign key at the commit (500).
    thread_id, path, snapshot = _arrange(api, route)
    before = snapshot()

    response = api.post(path, {**route.body, "previousRunId": ""})

    assert_problem(response, 400, "INVALID_PREVIOUS_RUN")
    assert snapshot() == before
    _assert_still_usable(api, route, path, thread_id)
