"""POST /v1/agui (docs/protocol.md#the-ag-ui-endpoint): a RunAgentInput drives a thread, over real HTTP on the live server."""
from __future__ import annotations

import json
import uuid

import pytest

from runs.history import build_model_messages
from tests.conftest import Api
from tests.runs.conftest import Runs
from tests.support.problems import assert_problem
from tests.support.run_requests import enable_tools
from tests.support.sse import iter_events, read_events, types
from threads.models import Message, Thread

# The run path on both databases: the lock, the first-use race and the storage (bin/test runs these on SQLite too).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

WEATHER = {"name": "get_weather", "description": "Weather for a city.",
           "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}}


def user(text: str, message_id: str | None = None) -> dict:
    return {"id": message_id or f"u-{uuid.uuid4()}", "role": "user", "content": text}


def run_input(thread_id: str, messages: list[dict], user_key: str | None = "alice", **extra) -> dict:
    # An AG-UI 1.0 client, as @ag-ui/client 1.0.0 sends it (0.0.x clients send no protocolVersion).
    body = {"threadId": thread_id, "runId": f"r-{uuid.uuid4()}", "protocolVersion": "1.0", "messages": messages, "tools": [],
            "context": [], "state": {}, "forwardedProps": {"userKey": user_key} if user_key else {}}
    return {**body, **extra}


def post(api: Api, body: dict, stream: bool = False):
    return api.post("/v1/agui", body, stream=stream)


def run(api: Api, body: dict) -> tuple[str, list[dict]]:
    """A whole AG-UI run: (the server's thread id, events)."""
    response = post(api, body, stream=True)
    assert response.status_code == 200, response.text
    assert response.headers["Content-Type"].startswith("text/event-stream")
    return response.headers["X-Thread-Id"], read_events(response)


def assistant_of(events: list[dict]) -> dict:
    """The assistant message as an AG-UI client builds it from the events."""
    message: dict = {"role": "assistant", "content": ""}
    calls: dict[str, dict] = {}
    for event in events:
        if event["type"] == "TEXT_MESSAGE_START":
            message["id"] = event["messageId"]
        elif event["type"] == "TEXT_MESSAGE_CONTENT":
            message["content"] += event["delta"]
        elif event["type"] == "TOOL_CALL_START":
            message["id"] = event["parentMessageId"]
            calls[event["toolCallId"]] = {"id": event["toolCallId"], "type": "function",
                                          "function": {"name": event["toolCallName"], "arguments": ""}}
        elif event["type"] == "TOOL_CALL_ARGS":
            calls[event["toolCallId"]]["function"]["arguments"] += event["delta"]
    if calls:
        message["toolCalls"] = list(calls.values())
    return message


def text_of(events: list[dict]) -> str:
    return "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")


def thread_count() -> int:
    return Thread.objects.count()


# --- the happy paths --------------------------------------------------------------------------------

def test_a_text_message_is_answered_with_the_clients_thread_and_run_ids(api: Api, runs: Runs):
    body = run_input("conv-1", [user("hello over ag-ui")])
    server_thread_id, events = run(api, body)

    assert types(events)[:3] == ["RUN_STARTED", "STATE_SNAPSHOT", "TEXT_MESSAGE_START"]
    assert types(events)[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert "CUSTOM" not in types(events)
    for event in (events[0], events[-1]):
        assert (event["threadId"], event["runId"]) == ("conv-1", body["runId"])
    assert text_of(events).startswith("(offline model) You said: hello over ag-ui")
    thread = runs.thread(server_thread_id)
    assert thread["runStatus"] == "idle"
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant"]
    assert thread["messages"][1]["id"] == events[2]["messageId"]
    assert Thread.objects.get(id=server_thread_id).external_id == "conv-1"


def test_the_same_thread_id_continues_the_thread_and_resent_history_is_stored_once(api: Api, runs: Runs):
    first = user("first question")
    server_thread_id, events = run(api, run_input("conv-2", [first]))
    history = [first, assistant_of(events), user("second question")]

    again_thread_id, again = run(api, run_input("conv-2", history))

    assert again_thread_id == server_thread_id
    assert text_of(again).startswith("(offline model) You said: second question")
    thread = runs.thread(server_thread_id)
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant", "user", "assistant"]
    stored = Message.objects.filter(thread_id=server_thread_id, role="user").order_by("created_at")
    assert [m.external_id for m in stored] == [first["id"], history[2]["id"]]


def test_a_client_tool_call_ends_the_run_and_the_tool_message_continues_it(api: Api, runs: Runs):
    ask = user('Use get_weather {"city": "Paris"}')
    server_thread_id, events = run(api, run_input("conv-3", [ask], tools=[WEATHER]))

    names = types(events)
    start = names.index("TOOL_CALL_START")
    assert names[start + 1:-2] and set(names[start + 1:-2]) == {"TOOL_CALL_ARGS"}
    assert names[-2:] == ["TOOL_CALL_END", "RUN_FINISHED"]
    assert "CUSTOM" not in types(events)
    call = assistant_of(events)["toolCalls"][0]
    assert json.loads(call["function"]["arguments"]) == {"city": "Paris"}
    assert events[-1]["outcome"] == {"type": "success", "pendingToolCallIds": [call["id"]]}
    assert runs.thread(server_thread_id)["pendingToolCallIds"] == [call["id"]]

    answer = {"id": "t-1", "role": "tool", "toolCallId": call["id"], "content": '{"forecast": "sunny"}'}
    _, after = run(api, run_input("conv-3", [ask, assistant_of(events), answer], tools=[WEATHER]))

    assert text_of(after) == 'Tool get_weather returned: {"forecast": "sunny"}'
    thread = runs.thread(server_thread_id)
    assert "pendingToolCallIds" not in thread and thread["runStatus"] == "idle"
    results = [b for m in thread["messages"] for b in m["content"] if b["type"] == "tool_result"]
    assert results == [{"type": "tool_result", "toolUseId": call["id"],
                        "content": [{"type": "text", "text": '{"forecast": "sunny"}'}]}]


def test_a_server_tools_result_is_a_message_of_its_own_that_the_client_may_send_back(api: Api, runs: Runs, project):
    enable_tools(project, "calculate")
    ask = user('calculate {"expression": "6*7"}')
    server_thread_id, events = run(api, run_input("conv-4", [ask]))

    result = next(e for e in events if e["type"] == "TOOL_CALL_RESULT")
    call_id = result["toolCallId"]
    assert result["messageId"] == f"{call_id}.result" and result["content"] == "42"
    step = assistant_of([e for e in events if e["type"].startswith("TOOL_CALL_") and e["type"] != "TOOL_CALL_RESULT"])
    echoed = {"id": result["messageId"], "role": "tool", "toolCallId": call_id, "content": "42"}
    final = {"id": events[-2]["messageId"], "role": "assistant", "content": text_of(events)}

    run(api, run_input("conv-4", [ask, step, echoed, final, user("thanks")]))

    roles = [m.role for m in Message.objects.filter(thread_id=server_thread_id).order_by("created_at", "id")]
    assert roles == ["user", "assistant", "tool", "assistant", "user", "assistant"]


def test_state_is_stored_on_the_thread_and_sent_back_after_run_started(api: Api):
    state = {"todo": ["buy milk"], "filter": "open"}
    server_thread_id, events = run(api, run_input("conv-5", [user("hi")], state=state))
    assert events[1] == {**events[1], "type": "STATE_SNAPSHOT", "snapshot": state}

    body = run_input("conv-5", [user("again")])
    del body["state"]  # a client that sends no state gets the stored one back
    _, again = run(api, body)

    assert again[1]["snapshot"] == state
    assert Thread.objects.get(id=server_thread_id).agui_state == state


def test_a_client_without_a_protocol_version_gets_no_1_0_fields(api: Api):
    body = run_input("conv-0x", [user('Use get_weather {"city": "Oslo"}')], tools=[WEATHER])
    del body["protocolVersion"]
    _, events = run(api, body)

    finished = events[-1]
    assert finished["type"] == "RUN_FINISHED" and "outcome" not in finished, finished
    assert any(e["type"] == "TOOL_CALL_START" for e in events)


def test_an_empty_state_on_a_thread_with_stored_state_is_answered_with_the_stored_one(api: Api):
    state = {"todo": ["buy milk"]}
    server_thread_id, _ = run(api, run_input("conv-5b", [user("hi")], state=state))

    # HttpAgent made afresh (a reload) sends `state: {}`: the stored state comes back and stays.
    _, again = run(api, run_input("conv-5b", [user("again")], state={}))

    assert again[1] == {**again[1], "type": "STATE_SNAPSHOT", "snapshot": state}
    assert Thread.objects.get(id=server_thread_id).agui_state == state
    _, changed = run(api, run_input("conv-5b", [user("done")], state={"todo": []}))
    assert changed[1]["snapshot"] == {"todo": []}
    assert Thread.objects.get(id=server_thread_id).agui_state == {"todo": []}


def test_context_and_state_reach_the_model_with_the_turn(api: Api):
    context = [{"description": "The page the user is on", "value": "/orders/42"}]
    server_thread_id, _ = run(api, run_input("conv-6", [user("where am I?")], context=context,
                                             state={"cart": 3}))

    thread = Thread.objects.get(id=server_thread_id)
    model_input = build_model_messages("", list(thread.messages.order_by("created_at", "id")))
    # In the user turn, before the user's words, as the application's data (never a system message).
    assert [m["role"] for m in model_input][:2] == ["system", "user"]
    assert [m["role"] for m in model_input].count("system") == 1
    context_part, words = model_input[1]["content"]
    assert '"value": "/orders/42"' in context_part["text"] and '"cart": 3' in context_part["text"]
    assert words == {"type": "text", "text": "where am I?"}


def test_another_user_with_the_same_thread_id_gets_a_thread_of_their_own(api: Api, runs: Runs):
    alice_thread, _ = run(api, run_input("shared-name", [user("alice's secret")]))
    bob_thread, _ = run(api, run_input("shared-name", [user("bob here")], user_key="bob"))

    assert bob_thread != alice_thread
    bob = Runs(Api(api.base_url, api.session.headers["x-api-key"], user_key="bob"))
    texts = [b.get("text", "") for m in bob.thread(bob_thread)["messages"] for b in m["content"]]
    assert not any("secret" in t for t in texts)


def test_a_thread_made_through_v1_is_continued_by_its_id(api: Api, runs: Runs):
    thread_id, _ = runs.run_new("started on /v1")

    server_thread_id, events = run(api, run_input(thread_id, [user("continued over ag-ui")]))

    assert server_thread_id == thread_id and events[0]["threadId"] == thread_id
    assert len(runs.thread(thread_id)["messages"]) == 4


# --- bad input: 4xx before any event, nothing written ------------------------------------------------

@pytest.mark.parametrize(("change", "field"), [
    ({"runId": None}, "runId"),
    ({"threadId": 42}, "threadId"),
    ({"threadId": "  "}, "threadId"),
    ({"messages": "hello"}, "messages"),
    ({"messages": [{"id": "m1", "role": "user", "content": 5}]}, "messages[0].content"),
    ({"messages": [{"id": "m1", "role": "tool", "content": "x"}]}, "messages[0].toolCallId"),
    ({"messages": [{"id": "m1", "role": "user", "content": ""}]}, "messages[0].content"),
    ({"tools": [{"name": "", "description": "x"}]}, "tools[0].name"),
    ({"context": [{"description": "no value"}]}, "context[0].value"),
    ({"forwardedProps": {}}, "forwardedProps.userKey"),
    ({"messages": []}, "messages"),
])
def test_a_malformed_run_agent_input_is_refused_naming_the_field(api: Api, change, field):
    body = {**run_input("conv-bad", [user("hello")]), **change}
    if change.get("runId", "") is None:
        del body["runId"]

    problem = assert_problem(post(api, body), 400, "VALIDATION_ERROR")

    assert problem["field"] == field, problem
    assert thread_count() == 0


def test_a_body_that_is_not_json_is_refused(api: Api):
    response = api.session.post(api.base_url + "/v1/agui", data=b"{nope", timeout=30,
                                headers={"Content-Type": "application/json"})
    assert assert_problem(response, 400, "VALIDATION_ERROR")["field"] == "body"


def test_it_answers_401_without_a_key(api: Api):
    assert_problem(post(Api(api.base_url, None), run_input("conv", [user("hi")])), 401, "UNAUTHORIZED")


def test_another_users_thread_id_answers_404_and_writes_nothing(api: Api, runs: Runs):
    alice_thread, _ = run(api, run_input("conv-7", [user("mine")]))

    response = post(api, run_input(alice_thread, [user("let me in")], user_key="bob"))

    assert_problem(response, 404, "THREAD_NOT_FOUND")
    assert assert_problem(post(api, run_input("thr_doesnotexist", [user("hi")])), 404, "THREAD_NOT_FOUND")
    assert len(runs.thread(alice_thread)["messages"]) == 2
    assert thread_count() == 1


def test_a_tool_message_for_a_call_that_is_not_pending_is_refused(api: Api, runs: Runs):
    ask = user("hello")
    server_thread_id, events = run(api, run_input("conv-8", [ask]))
    stray = {"id": "t-9", "role": "tool", "toolCallId": "call_nobody_made", "content": "42"}

    response = post(api, run_input("conv-8", [ask, assistant_of(events), stray]))

    problem = assert_problem(response, 400, "INVALID_TOOL_RESULT")
    assert problem["extraToolCallIds"] == ["call_nobody_made"]
    assert len(runs.thread(server_thread_id)["messages"]) == 2


def test_a_tool_message_on_a_new_thread_is_refused_and_creates_no_thread(api: Api):
    stray = {"id": "t-1", "role": "tool", "toolCallId": "call_x", "content": "42"}

    assert_problem(post(api, run_input("conv-9", [user("hi"), stray])), 400, "INVALID_TOOL_RESULT")
    assert thread_count() == 0


def test_an_assistant_tool_call_the_server_never_made_is_refused(api: Api):
    invented = {"id": "a-1", "role": "assistant", "toolCalls": [
        {"id": "c1", "type": "function", "function": {"name": "x", "arguments": "{}"}}]}

    problem = assert_problem(post(api, run_input("conv-10", [user("hi"), invented])), 400, "VALIDATION_ERROR")

    assert problem["field"] == "messages[1].toolCalls"
    assert thread_count() == 0


def test_a_second_run_on_a_busy_thread_is_refused_before_the_stream(api: Api, runs: Runs):
    slow = post(api, run_input("conv-11", [user("!slow")]), stream=True)
    assert slow.status_code == 200
    events = iter_events(slow)
    assert next(events)["type"] == "RUN_STARTED"
    server_thread_id = slow.headers["X-Thread-Id"]

    response = post(api, run_input("conv-11", [user("!slow"), user("me too")]))

    problem = assert_problem(response, 409, "CONCURRENT_RUN")
    assert problem["currentRunId"] == slow.headers["X-Run-Id"]
    slow.close()  # the client leaving cancels the slow run
    thread = runs.wait_idle(server_thread_id)
    assert [m["role"] for m in thread["messages"]] == ["user", "assistant"]


def test_a_history_over_the_message_limit_is_refused_as_too_large(api: Api):
    from django.conf import settings as django_settings

    limit = django_settings.AGUI_MAX_MESSAGES
    history = [user(f"message {n}") for n in range(limit + 1)]

    problem = assert_problem(post(api, run_input("conv-12", history)), 413, "PAYLOAD_TOO_LARGE")

    assert problem["field"] == "messages" and problem["maxMessages"] == limit
    assert thread_count() == 0


def test_two_first_requests_for_one_new_thread_id_make_one_thread_and_one_run(api: Api, runs: Runs):
    from concurrent.futures import ThreadPoolExecutor

    def start(text: str):
        return post(api, run_input("conv-race", [user(text)]), stream=True)

    with ThreadPoolExecutor(2) as pool:
        responses = list(pool.map(start, ["!slow", "!slow"]))

    assert sorted(r.status_code for r in responses) == [200, 409]
    streaming = next(r for r in responses if r.status_code == 200)
    assert_problem(next(r for r in responses if r.status_code == 409), 409, "CONCURRENT_RUN")
    assert Thread.objects.filter(external_id="conv-race").count() == 1
    streaming.close()
    runs.wait_idle(streaming.headers["X-Thread-Id"])


def test_a_body_over_the_size_limit_is_refused_as_too_large(api: Api):
    from django.conf import settings as django_settings

    huge = user("x" * (django_settings.MAX_REQUEST_BYTES + 1))

    assert_problem(post(api, run_input("conv-huge", [huge])), 413, "PAYLOAD_TOO_LARGE")
    assert thread_count() == 0
