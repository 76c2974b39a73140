"""The OpenAPI description of POST /v1/agui: AG-UI's own RunAgentInput, kept apart from the wire models."""
import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(client) -> dict:
    response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def test_the_agui_endpoint_takes_ag_uis_run_agent_input(schema):
    operation = schema["paths"]["/v1/agui"]["post"]
    components = schema["components"]["schemas"]

    assert operation["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/AgUiRunAgentInput"}
    body = components["AgUiRunAgentInput"]
    assert {"threadId", "runId", "messages", "tools", "context", "state", "forwardedProps"} <= set(body["properties"])
    assert {"threadId", "runId", "messages"} <= set(body["required"])


def test_ag_uis_models_do_not_replace_the_wire_models_of_the_same_name(schema):
    components = schema["components"]["schemas"]

    assert "toolCallId" in components["AgUiToolMessage"]["properties"]
    assert "parameters" in components["AgUiTool"]["properties"]
    # The v1 wire Message (content blocks) is still the one the thread endpoints refer to.
    assert "createdAt" in components["Message"]["properties"]


def test_the_agui_endpoint_streams_plain_ag_ui_events_and_says_its_errors(schema):
    operation = schema["paths"]["/v1/agui"]["post"]

    ok = operation["responses"]["200"]
    assert set(ok["content"]) == {"text/event-stream"}
    for event in ("RUN_STARTED", "STATE_SNAPSHOT", "TOOL_CALL_END", "RUN_FINISHED", "pendingToolCallIds", "RUN_ERROR"):
        assert event in ok["description"]
    assert {"X-Thread-Id", "X-Run-Id"} <= set(ok["headers"])
    for status in ("400", "401", "404", "409", "413", "500"):
        assert operation["responses"][status]["content"] == {
            "application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
    assert "forwardedProps.userKey" in operation["description"]
