"""The server's own limits (its columns' lengths, the most tokens a run may ask for) live in the
server (runs/bodies.py, threads/bodies.py), not in the client's wire models: the client builds a body
over such a limit without complaint, and the server refuses it with a 400 problem naming the field.
So a server limit changes without a client release."""
from __future__ import annotations

import pytest

from clientsdk import wire
from runs.bodies import MAX_TOKENS, column_length
from runs.models import Run
from tests.support.problems import assert_problem
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db(transaction=True)

HI = {"role": "user", "content": [{"type": "text", "text": "hi"}]}


def over(model: type, name: str) -> str:
    return "x" * (column_length(model, name) + 1)


# (the field as the problem names it, the run body's fields by their Python names)
RUN_BODIES = [
    ("model", {"model": over(Run, "model")}),
    ("previousRunId", {"previous_run_id": over(Run, "id")}),
    ("maxTokens", {"max_tokens": MAX_TOKENS + 1}),
    ("message.content[0].toolUseId", {"message": {"role": "user", "content": [
        {"type": "tool_result", "toolUseId": over(Message, "tool_call_id"), "content": []}]}}),
]


@pytest.mark.parametrize(("field", "fields"), RUN_BODIES, ids=[field for field, _ in RUN_BODIES])
def test_a_run_body_the_client_builds_is_refused_by_the_servers_own_limit(api, field, fields):
    body = wire.CreateThreadWithRunBody.body(**{"message": HI, "user_key": "alice", **fields})

    response = api.post("/v1/threads/runs", body)

    assert_problem(response, 400, "VALIDATION_ERROR", field=field)
    assert api.get("/v1/threads").json()["threads"] == []  # nothing was started


def test_a_thread_name_the_client_builds_is_refused_by_the_servers_own_limit(api):
    thread_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"]
    body = wire.UpdateThreadBody.body(name=over(Thread, "name"))

    assert_problem(api.patch(f"/v1/threads/{thread_id}", body), 400, "VALIDATION_ERROR", field="name")
    assert api.thread(thread_id).get("name") is None


def test_a_body_at_the_servers_limits_is_taken(api):
    thread_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"]
    name = "n" * column_length(Thread, "name")

    response = api.patch(f"/v1/threads/{thread_id}", wire.UpdateThreadBody.body(name=name))

    assert response.status_code == 200, response.text
    assert api.thread(thread_id)["name"] == name
