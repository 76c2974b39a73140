"""POST /v1/agui against the openai provider and the scripted fake vendor: what the model is given."""
from __future__ import annotations


import pytest

from providers.base import APP_CONTEXT_LABEL
from tests.conftest import Api
from tests.runs.test_agui import WEATHER, assistant_of, run, run_input, text_of, user
from tests.runs.test_run_openai import openai_server  # noqa: F401 - fixture
from tests.support.fixtures_openai import Vendor, fake, vendor  # noqa: F401 - fixtures
from tests.support.fake_openai import Text, ToolCall, ToolCalls
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def agui_api(openai_server, api_key) -> Api:  # noqa: F811
    return Api(openai_server.url, api_key)


def test_context_state_and_client_tools_reach_the_model_and_components_do_not(agui_api: Api, fake: Vendor):
    fake.script(Text("You are on the orders page."))
    context = [{"description": "The page the user is on", "value": "/orders/42"}]

    _, events = run(agui_api, run_input("conv-ctx", [user("where am I?")], tools=[WEATHER], context=context,
                                        state={"cart": 3}))

    assert text_of(events) == "You are on the orders page."
    body = fake.requests[-1].body
    # The client's context and state are the application's data inside the user turn, never a system
    # message (the project does not allow system prompt overrides): issue 33, item 6.
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    context, question = body["messages"][-1]["content"]
    assert context["text"].startswith(APP_CONTEXT_LABEL)
    assert "/orders/42" in context["text"] and '"cart": 3' in context["text"]
    assert question == {"type": "text", "text": "where am I?"}
    assert [t["function"]["name"] for t in body["tools"]] == ["get_weather"]


def test_a_tool_message_continues_the_model_with_the_result(agui_api: Api, fake: Vendor):
    fake.script(ToolCalls([ToolCall("get_weather", ['{"city": "Oslo"}'], id="call_w")]), Text("Sunny in Oslo."))
    ask = user("weather in Oslo?")
    _, first = run(agui_api, run_input("conv-cont", [ask], tools=[WEATHER]))
    assert first[-1]["outcome"] == {"type": "success", "pendingToolCallIds": ["call_w"]}

    answer = {"id": "t-1", "role": "tool", "toolCallId": "call_w", "content": "sunny, 20 C"}
    _, after = run(agui_api, run_input("conv-cont", [ask, assistant_of(first), answer], tools=[WEATHER]))

    assert text_of(after) == "Sunny in Oslo."
    sent = fake.requests[-1].body["messages"]
    assert sent[-2]["tool_calls"][0]["id"] == "call_w"
    assert sent[-1] == {"role": "tool", "tool_call_id": "call_w", "content": "sunny, 20 C"}
    # Sent again, the same history is not a new turn.
    assert_problem(agui_api.post("/v1/agui", run_input("conv-cont", [ask, assistant_of(first), answer])),
                   400, "VALIDATION_ERROR")


def test_an_ag_ui_image_and_document_reach_the_model_byte_for_byte(agui_api: Api, fake: Vendor):
    from tests.support.images import b64, pdf, png

    shot = png(200, 200, seed=5)
    fake.script(Text("A picture and a page."))
    message = {"id": "u-media", "role": "user", "content": [
        {"type": "text", "text": "what are these?"},
        {"type": "image", "source": {"type": "data", "value": b64(shot), "mimeType": "image/png"}},
        {"type": "document", "source": {"type": "data", "value": b64(pdf()), "mimeType": "application/pdf"}},
        {"type": "image", "source": {"type": "url", "value": "https://example.com/cat.jpg", "mimeType": "image/jpeg"}}]}
    _, events = run(agui_api, run_input("conv-media", [message]))
    assert text_of(events) == "A picture and a page."
    parts = fake.requests[-1].body["messages"][-1]["content"]
    images = [p["image_url"]["url"] for p in parts if p["type"] == "image_url"]
    assert images[0] == f"data:image/png;base64,{b64(shot)}" and images[1] == "https://example.com/cat.jpg"
    (document,) = [p["file"] for p in parts if p["type"] == "file"]
    assert document["file_data"] == f"data:application/pdf;base64,{b64(pdf())}"


@pytest.mark.parametrize(("source", "field"), [
    ({"type": "data", "value": "aGVsbG8=", "mimeType": "image/png"}, "messages[0].content[1].source.value"),
    ({"type": "url", "value": "file:///etc/passwd", "mimeType": "image/png"}, "messages[0].content[1].source.value"),
    ({"type": "url", "value": "http://169.254.169.254/latest/x.png", "mimeType": "image/png"},
     "messages[0].content[1].source.value"),
    ({"type": "data", "value": "aGVsbG8=", "mimeType": "application/zip"}, "messages[0].content[1].source.mimeType"),
])
def test_a_bad_ag_ui_part_is_refused_naming_it_and_nothing_is_stored(agui_api: Api, fake: Vendor, source, field):
    message = {"id": "u-bad", "role": "user", "content": [{"type": "text", "text": "look"},
                                                          {"type": "image", "source": source}]}
    response = agui_api.post("/v1/agui", run_input("conv-bad-media", [message]))
    assert_problem(response, 400, "VALIDATION_ERROR", field=field)
    assert fake.requests == [] and agui_api.get("/v1/threads").json()["threads"] == []
