"""The gateway's wire format and request checks, over plain HTTP on the offline model."""
from __future__ import annotations

import json

import pytest
import requests

from tests.gateway.wire import assert_spec_stream, post_chat, tool_calls_of, weather_tool

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.both_dbs
def test_it_streams_text_by_the_spec_rules(live_server_url, api_key):
    answer = post_chat(live_server_url, api_key, {"messages": [{"role": "user", "content": "hello"}], "stream": True})

    assert_spec_stream(answer)
    assert answer.text.startswith("(offline model) You said: hello")
    assert answer.choice_chunks[-1]["choices"][0] == {"index": 0, "delta": {}, "finish_reason": "stop"}
    assert answer.response.headers["Cache-Control"] == "no-cache"


def test_it_streams_offline_tool_calls_as_tool_call_deltas(live_server_url, api_key):
    answer = post_chat(live_server_url, api_key, {
        "model": "offline", "stream": True, "stream_options": {"include_usage": True},
        "tools": [weather_tool(), weather_tool("get_time")],
        "messages": [{"role": "user", "content": 'get_time and get_weather {"city": "Lima"}'}],
    })

    assert_spec_stream(answer, include_usage=True)
    assert answer.choice_chunks[-1]["choices"][0]["finish_reason"] == "tool_calls"
    calls = tool_calls_of(answer)
    assert [(c["name"], json.loads(c["arguments"])) for c in calls] == [
        ("get_time", {"city": "Lima"}), ("get_weather", {"city": "Lima"})]
    assert calls[0]["id"] != calls[1]["id"]


def test_a_tool_choice_of_none_keeps_the_offline_model_from_calling_tools(live_server_url, api_key):
    answer = post_chat(live_server_url, api_key, {
        "stream": True, "tools": [weather_tool()], "tool_choice": "none",
        "messages": [{"role": "user", "content": "get_weather please"}],
    })

    assert_spec_stream(answer)
    assert tool_calls_of(answer) == []
    assert "I was offered these tools: get_weather" in answer.text


def test_it_answers_tool_results_sent_back_in_the_conversation(live_server_url, api_key):
    answer = post_chat(live_server_url, api_key, {"stream": True, "messages": [
        {"role": "user", "content": "get_weather"},
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "call_1", "type": "function", "function": {"name": "get_weather", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": [{"type": "text", "text": "sunny"}]},
    ]})

    assert_spec_stream(answer)
    assert answer.text == "Tool get_weather returned: sunny"


def test_it_tolerates_the_extra_fields_tinyrobot_sends(live_server_url, api_key):
    answer = post_chat(live_server_url, api_key, {"stream": True, "messages": [
        {"role": "user", "content": "first", "metadata": {"createdAt": 1}, "state": {}, "loading": False},
        {"role": "assistant", "content": "ok", "loading": False, "reasoning_content": "hmm", "refusal": None,
         "state": {"thinking": False}},
        {"role": "user", "content": [{"type": "text", "text": "sec"}, {"type": "text", "text": "ond"}],
         "metadata": {"createdAt": 2, "updatedAt": 2}, "anything": "else"},
    ]})

    assert_spec_stream(answer)
    assert answer.text.startswith("(offline model) You said: second")


def test_it_accepts_the_key_in_the_x_api_key_header(live_server_url, api_key):
    answer = post_chat(live_server_url, None, {"stream": False, "messages": [{"role": "user", "content": "hi"}]},
                       headers={"x-api-key": api_key})

    assert answer.response.status_code == 200
    assert answer.response.json()["choices"][0]["message"]["content"].startswith("(offline model)")


def test_it_rejects_a_missing_key_in_openai_error_shape(live_server_url):
    answer = post_chat(live_server_url, None, {"messages": [{"role": "user", "content": "hi"}]})

    assert answer.response.status_code == 401
    assert answer.response.json() == {"error": {
        "message": "A valid project API key is required (Authorization: Bearer <key> or x-api-key).",
        "type": "invalid_request_error", "code": "invalid_api_key", "param": None}}


@pytest.mark.parametrize(("body", "param"), [
    ({}, "messages"),
    ({"messages": []}, "messages"),
    ({"messages": [{"role": "robot", "content": "hi"}]}, "messages[0].role"),
    ({"messages": [{"role": "tool", "content": "x"}]}, "messages[0].tool_call_id"),
    ({"messages": [{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}]},
     "messages[0].content[0]"),
    ({"messages": [{"role": "user", "content": "hi"}], "n": 2}, "n"),
    ({"messages": [{"role": "user", "content": "hi"}], "temperature": 3}, "temperature"),
    ({"messages": [{"role": "user", "content": "hi"}], "max_tokens": 0}, "max_tokens"),
    ({"messages": [{"role": "user", "content": "hi"}], "tools": [{"type": "function", "function": {}}]},
     "tools[0].function.name"),
    ({"messages": [{"role": "user", "content": "hi"}], "tools": [weather_tool()],
      "tool_choice": {"type": "function", "function": {"name": "other"}}}, "tool_choice"),
])
def test_it_rejects_a_malformed_request_naming_the_param(live_server_url, api_key, body, param):
    answer = post_chat(live_server_url, api_key, body)

    assert answer.response.status_code == 400
    error = answer.response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] == param


def test_it_rejects_a_body_that_is_not_json(live_server_url, api_key):
    response = requests.post(live_server_url + "/api/chat/completions", data=b"{nope",
                             headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"},
                             timeout=30)

    assert response.status_code == 400
    assert response.json()["error"]["message"] == "The request body is not valid JSON."


def test_other_paths_and_methods_answer_in_openai_error_shape(live_server_url, api_key):
    headers = {"Authorization": f"Bearer {api_key}"}

    wrong_method = requests.get(live_server_url + "/api/chat/completions", headers=headers, timeout=30)
    wrong_path = requests.post(live_server_url + "/api/completions", json={}, headers=headers, timeout=30)

    assert wrong_method.status_code == 405
    assert wrong_method.headers["Allow"] == "POST"
    assert wrong_method.json()["error"]["code"] == "method_not_allowed"
    assert wrong_path.status_code == 404
    assert wrong_path.json()["error"]["code"] == "unknown_url"


def test_a_browser_session_needs_the_csrf_token(live_server_url, transactional_db):
    from django.contrib.auth.models import User
    from django.test import Client

    user = User.objects.create_user("gateway-user", password="pw")
    browser = Client()
    browser.force_login(user)
    cookies = {"sessionid": browser.cookies["sessionid"].value, "csrftoken": "a" * 32}
    body = {"messages": [{"role": "user", "content": "from the page"}]}
    url = live_server_url + "/api/chat/completions"

    without_token = requests.post(url, json=body, cookies=cookies, timeout=30)
    with_token = requests.post(url, json=body, cookies=cookies, headers={"X-CSRFToken": "a" * 32}, timeout=30)

    assert without_token.status_code == 403
    assert without_token.json()["error"]["code"] == "csrf_failed"
    assert with_token.status_code == 200
    assert with_token.json()["choices"][0]["message"]["content"].startswith("(offline model) You said: from the page")


def test_it_refuses_an_oversized_body_sent_without_a_content_length(live_server_url, api_key):
    body = json.dumps({"messages": [{"role": "user", "content": "x" * 1_100_000}]}).encode()

    def pieces():  # a generator body goes out with chunked transfer encoding, no Content-Length
        for start in range(0, len(body), 65536):
            yield body[start:start + 65536]

    response = requests.post(live_server_url + "/api/chat/completions", data=pieces(), timeout=30,
                             headers={"Authorization": f"Bearer {api_key}", "Content-Type": "application/json"})

    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"
