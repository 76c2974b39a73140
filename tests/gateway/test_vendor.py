"""The gateway in front of a real OpenAI-compatible vendor (the tests' scripted fake server)."""
from __future__ import annotations

import time

import pytest
import requests

from tests.gateway.wire import Answer, assert_spec_stream, post_chat, tool_calls_of, weather_tool
from tests.support.fake_openai import Drop, HTTPError, Stall, StreamError, Text, ToolCall, ToolCalls
from tests.support.fixtures_openai import vendor  # noqa: F401 - fixture
from tests.support.live import LiveServer

pytestmark = pytest.mark.django_db(transaction=True)

VENDOR_KEY = "sk-vendor-secret-3f9a1c77e2"


@pytest.fixture(scope="module")
def gateway(vendor, django_db_setup, django_db_blocker):
    server = LiveServer("gateway-vendor", {
        "GATEWAY_MODELS": "smart=openai:fake-model-1,default=openai",
        "OPENAI_BASE_URL": vendor.base_url, "OPENAI_API_KEY": VENDOR_KEY, "OPENAI_MODEL": "fake-default",
        "LOG_LEVEL": "INFO",
    })
    yield server
    server.stop()


@pytest.fixture
def fake(vendor):
    """The vendor, with nothing left over from an earlier test's script."""
    yield vendor
    assert vendor.pending == 0, "a scripted reply was not used"


def _ask(gateway, api_key, **body) -> Answer:
    body.setdefault("model", "smart")
    body.setdefault("messages", [{"role": "user", "content": "hi"}])
    return post_chat(gateway.url, api_key, body)


def test_it_passes_vendor_text_through_as_chunks(gateway, fake, api_key):
    fake.script(Text(["Hel", "lo", " there"], usage={"prompt_tokens": 5, "completion_tokens": 3,
                                                     "total_tokens": 8}))

    answer = _ask(gateway, api_key, stream=True, stream_options={"include_usage": True})

    assert_spec_stream(answer, include_usage=True)
    assert answer.text == "Hello there"
    assert answer.chunks[-1]["usage"] == {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}
    # The caller sees its alias; the vendor sees the configured model and the server's key.
    assert {chunk["model"] for chunk in answer.chunks} == {"smart"}
    assert fake.last_request.body["model"] == "fake-model-1"
    assert fake.last_request.api_key == VENDOR_KEY


def test_an_alias_without_a_model_uses_the_configured_default(gateway, fake, api_key):
    fake.script(Text(["ok"]))

    answer = _ask(gateway, api_key, model="default", stream=False)

    assert answer.response.json()["choices"][0]["message"]["content"] == "ok"
    assert fake.last_request.body["model"] == "fake-default"


def test_it_passes_split_tool_call_arguments_through(gateway, fake, api_key):
    fake.script(ToolCalls([ToolCall("get_weather", ['{"ci', 'ty": "Par', 'is"}'], id="call_w"),
                           ToolCall("get_time", ['{"tz"', ': "CET"}'], id="call_t")],
                          interleave=True, repeat_head=True))

    answer = _ask(gateway, api_key, stream=True, tools=[weather_tool(), weather_tool("get_time")])

    # assert_spec_stream checks id, type and name come once per call even though the vendor repeated them.
    assert_spec_stream(answer)
    assert answer.choice_chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    assert tool_calls_of(answer) == [
        {"id": "call_w", "name": "get_weather", "arguments": '{"city": "Paris"}'},
        {"id": "call_t", "name": "get_time", "arguments": '{"tz": "CET"}'},
    ]
    fragments = [part["function"]["arguments"] for chunk in answer.choice_chunks
                 for part in chunk["choices"][0]["delta"].get("tool_calls") or [] if part["index"] == 0]
    assert [f for f in fragments if f] == ['{"ci', 'ty": "Par', 'is"}']


def test_it_answers_vendor_tool_calls_without_streaming(gateway, fake, api_key):
    fake.script(ToolCalls([ToolCall("get_weather", ['{"city": ', '"Rome"}'], id="call_r")]))

    answer = _ask(gateway, api_key, stream=False, tools=[weather_tool()])

    body = answer.response.json()
    assert body["choices"][0]["finish_reason"] == "tool_calls"
    assert body["choices"][0]["message"]["tool_calls"] == [
        {"id": "call_r", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'}}]


def test_it_forwards_only_what_the_vendor_needs(gateway, fake, api_key):
    fake.script(Text(["done"]))
    messages = [
        {"role": "developer", "content": "Be brief.", "metadata": {"createdAt": 1}},
        {"role": "user", "content": [{"type": "text", "text": "weather?"}], "metadata": {"createdAt": 2},
         "state": {}, "loading": False, "id": "local-1"},
        {"role": "assistant", "content": "", "loading": False, "reasoning_content": "thinking...", "refusal": None,
         "state": {"toolCall": {"call_1": {"status": "success"}}},
         "tool_calls": [{"index": 0, "id": "call_1", "type": "function",
                         "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "rain", "state": {}, "metadata": {}},
    ]

    answer = _ask(gateway, api_key, stream=True, messages=messages, tools=[weather_tool()],
                  tool_choice={"type": "function", "function": {"name": "get_weather"}},
                  max_completion_tokens=50, temperature=0.5, top_p=0.9, user="someone")

    assert_spec_stream(answer)
    sent = fake.last_request.body
    assert sent["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "weather?"},
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Oslo"}'}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": "rain"},
    ]
    assert sent["tools"] == [weather_tool()]
    assert sent["tool_choice"] == {"type": "function", "function": {"name": "get_weather"}}
    assert sent["max_tokens"] == 50
    assert sent["temperature"] == 0.5
    assert sent["top_p"] == 0.9 and "user" not in sent  # top_p changes the answer: forwarded


@pytest.mark.parametrize("stream", [True, False])
def test_a_vendor_rate_limit_before_the_stream_is_a_429_with_retry_after(gateway, fake, api_key, stream):
    fake.script(HTTPError(429, retry_after=7))

    answer = _ask(gateway, api_key, stream=stream)

    assert answer.response.status_code == 429
    assert answer.response.headers["Retry-After"] == "7"
    assert answer.response.json()["error"]["code"] == "upstream_rate_limited"


@pytest.mark.parametrize(("vendor_says", "we_say"), [("0.2", "1"), ("0", "1"), ("2.5", "3")])
def test_a_vendor_retry_after_is_passed_on_in_whole_seconds_of_at_least_one(gateway, fake, api_key, vendor_says,
                                                                              we_say):
    fake.script(HTTPError(429, retry_after=vendor_says))

    answer = _ask(gateway, api_key, stream=False)

    assert answer.response.status_code == 429
    assert answer.response.headers["Retry-After"] == we_say


@pytest.mark.parametrize("status", [500, 401])
def test_a_vendor_failure_before_the_stream_is_a_502(gateway, fake, api_key, status):
    fake.script(HTTPError(status))

    answer = _ask(gateway, api_key, stream=True)

    assert answer.response.status_code == 502
    assert answer.response.json()["error"]["type"] == "server_error"
    assert answer.response.json()["error"]["code"] == "upstream_error"


def test_a_request_the_vendor_rejects_is_the_callers_400(gateway, fake, api_key):
    fake.script(HTTPError(400, message="messages[1]: bad"))

    answer = _ask(gateway, api_key, stream=True)

    assert answer.response.status_code == 400
    assert answer.response.json()["error"] == {"message": "The model provider rejected the request.",
                                               "type": "invalid_request_error", "code": "upstream_rejected",
                                               "param": None}


@pytest.mark.parametrize("failure", [StreamError(after=["Hel", "lo"]), Drop(after=["Hel", "lo"])],
                         ids=["error-event", "dropped"])
def test_a_vendor_failure_during_the_stream_ends_it_with_an_error_event(gateway, fake, api_key, failure):
    fake.script(failure)

    answer = _ask(gateway, api_key, stream=True)

    assert answer.response.status_code == 200
    assert answer.text == "Hello"
    assert answer.events[-1] == "[DONE]"
    error = answer.events[-2]["error"]
    assert set(error) == {"message", "type", "code", "param"}
    assert error["type"] == "server_error"
    assert [e for e in answer.events if isinstance(e, dict) and "error" in e] == [answer.events[-2]]
    assert all(c["choices"][0]["finish_reason"] is None for c in answer.choice_chunks)


def test_the_vendor_key_never_reaches_an_answer_or_the_log(gateway, fake, api_key):
    leaky = f"Incorrect API key provided: {VENDOR_KEY}."
    fake.script(HTTPError(401, message=leaky), HTTPError(500, message=leaky),
                StreamError(after=["x"], message=leaky), HTTPError(429, message=leaky), Text(["fine"]))
    answers = [_ask(gateway, api_key, stream=True), _ask(gateway, api_key, stream=False),
               _ask(gateway, api_key, stream=True), _ask(gateway, api_key, stream=True),
               _ask(gateway, api_key, stream=True)]
    unknown_model = _ask(gateway, api_key, model="nope")
    bad_key = _ask(gateway, "tk_wrong", stream=True)

    assert [a.response.status_code for a in answers] == [502, 502, 200, 429, 200]
    for answer in [*answers, unknown_model, bad_key]:
        assert VENDOR_KEY not in answer.raw
        assert VENDOR_KEY not in str(answer.response.headers)
    log = gateway.log_text()
    # The failures were logged (so the log is being read), without the key.
    assert "gateway: the model failed" in log
    assert VENDOR_KEY not in log


def test_the_vendor_call_is_closed_when_the_caller_leaves(gateway, fake, api_key):
    fake.script(Stall(after=["thinking"], seconds=30))
    with requests.post(gateway.url + "/api/chat/completions", stream=True, timeout=30,
                       headers={"Authorization": f"Bearer {api_key}"},
                       json={"model": "smart", "stream": True, "messages": [{"role": "user", "content": "hi"}]}) as r:
        first = next(r.iter_lines())
        assert first.startswith(b"data: ")
    record = fake.last_request

    assert record.disconnected.wait(10)
    # The call left is still recorded, as cancelled, once the vendor's response is closed. (Waiting for
    # it also keeps the server's write from racing the test database's flush after the test.)
    from telemetry.models import Usage

    deadline = time.monotonic() + 30
    while not Usage.objects.filter(kind=Usage.Kind.GATEWAY, outcome=Usage.Outcome.CANCELLED).exists():
        assert time.monotonic() < deadline, "the cancelled gateway call was never recorded"
        time.sleep(0.05)
