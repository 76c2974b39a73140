"""The OpenAPI description at /v1/openapi.json and the API reference page at /v1/docs."""
import re

import pytest
import requests
from django.urls import URLPattern, URLResolver, get_resolver
from drf_spectacular.validation import validate_schema

pytestmark = pytest.mark.django_db

OPERATIONS = {
    ("get", "/v1/threads"), ("post", "/v1/threads"),
    ("get", "/v1/threads/{threadId}"), ("patch", "/v1/threads/{threadId}"), ("delete", "/v1/threads/{threadId}"),
    ("get", "/v1/threads/{threadId}/messages"), ("get", "/v1/threads/{threadId}/messages/{messageId}"),
    ("post", "/v1/threads/runs"), ("post", "/v1/threads/{threadId}/runs"),
    ("delete", "/v1/threads/{threadId}/runs/{runId}"), ("get", "/v1/threads/{threadId}/runs/{runId}/events"),
    ("post", "/v1/threads/{threadId}/components/{componentId}/state"),
    ("post", "/v1/agui"),
    ("get", "/v1/threads/{threadId}/messages/{messageId}/suggestions"),
    ("post", "/v1/threads/{threadId}/messages/{messageId}/suggestions"),
    ("post", "/threads/{threadId}/generate-name"),
    ("get", "/threads/{threadId}/messages/{messageId}/suggestions"),
    ("post", "/threads/{threadId}/messages/{messageId}/suggestions"),
}
NOT_API = {"/v1/openapi.json", "/v1/docs"}


@pytest.fixture
def schema(client) -> dict:
    response = client.get("/v1/openapi.json")
    assert response.status_code == 200
    return response.json()


def _routes(resolver=None, prefix: str = "/") -> set[str]:
    """Every /v1 route of the URLconf, with <converter:name> written as OpenAPI's {camelName}."""
    resolver = resolver or get_resolver()
    found = set()
    for entry in resolver.url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found |= _routes(entry, route)
        elif isinstance(entry, URLPattern):
            found.add(route)

    def camel(match: re.Match) -> str:
        head, *rest = match.group(1).split("_")
        return "{" + head + "".join(part.title() for part in rest) + "}"

    return {re.sub(r"<(?:\w+:)?(\w+)>", camel, r) for r in found if r.startswith("/v1/")} - NOT_API


def test_the_schema_is_valid_openapi_3(schema):
    assert schema["openapi"].startswith("3.")
    validate_schema(schema)


def test_every_reference_resolves(schema):
    refs = set(re.findall(r'"\$ref": "([^"]+)"', __import__("json").dumps(schema)))

    missing = {ref for ref in refs if ref.split("/")[-1] not in schema["components"]["schemas"]}
    assert refs and not missing


def test_it_describes_every_endpoint_of_the_spec(schema):
    described = {(method, path) for path, operations in schema["paths"].items() for method in operations}

    assert OPERATIONS <= described


def test_it_describes_every_v1_route_the_server_has(schema):
    assert _routes() <= set(schema["paths"])


def test_every_operation_needs_the_api_key_or_a_bearer_access_token(schema):
    scheme = schema["components"]["securitySchemes"]["ApiKeyAuth"]
    assert scheme == {**scheme, "type": "apiKey", "in": "header", "name": "x-api-key"}
    bearer = schema["components"]["securitySchemes"]["BearerAuth"]
    assert bearer == {**bearer, "type": "http", "scheme": "bearer", "bearerFormat": "JWT"}
    for method, path in OPERATIONS:
        assert schema["paths"][path][method]["security"] == [{"ApiKeyAuth": []}, {"BearerAuth": []}], (method, path)


def test_the_user_key_is_optional_since_a_bearer_token_can_name_the_user(schema):
    for method, path in OPERATIONS:
        for parameter in schema["paths"][path][method].get("parameters", []):
            if parameter["name"] == "userKey":
                assert not parameter.get("required"), (method, path)


def test_it_describes_the_token_exchange(schema):
    operation = schema["paths"]["/oauth/token"]["post"]

    assert operation["security"] == [{"ApiKeyAuth": []}]
    form = operation["requestBody"]["content"]["application/x-www-form-urlencoded"]["schema"]
    assert form == {"$ref": "#/components/schemas/OAuthTokenRequest"}
    request = schema["components"]["schemas"]["OAuthTokenRequest"]
    assert set(request["required"]) == {"grant_type", "subject_token", "subject_token_type"}
    assert request["properties"]["grant_type"]["enum"] == ["urn:ietf:params:oauth:grant-type:token-exchange"]
    response = schema["components"]["schemas"]["OAuthTokenResponse"]
    assert set(response["required"]) == {"access_token", "token_type", "expires_in", "issued_token_type"}
    assert set(operation["responses"]) == {"200", "400", "401"}
    errors = schema["components"]["schemas"]["OAuthError"]["properties"]["error"]["enum"]
    assert set(errors) == {"invalid_request", "unsupported_grant_type", "invalid_grant", "invalid_client"}


def test_every_operation_describes_its_errors_as_problems(schema):
    assert {"type", "title", "status", "detail", "instance", "code"} <= set(
        schema["components"]["schemas"]["Problem"]["required"])
    for method, path in OPERATIONS:
        responses = schema["paths"][path][method]["responses"]
        for status in ("400", "401", "500"):
            content = responses[status]["content"]
            assert content == {"application/problem+json": {"schema": {"$ref": "#/components/schemas/Problem"}}}
        if "{threadId}" in path:
            assert "404" in responses, (method, path)
    assert "409" in schema["paths"]["/v1/threads/{threadId}"]["delete"]["responses"]


def test_the_run_endpoints_stream_ag_ui_events(schema):
    new_thread = schema["paths"]["/v1/threads/runs"]["post"]
    on_thread = schema["paths"]["/v1/threads/{threadId}/runs"]["post"]

    for operation, body in ((new_thread, "CreateThreadWithRunBody"), (on_thread, "CreateRunBody")):
        assert operation["requestBody"]["content"]["application/json"]["schema"] == {
            "$ref": f"#/components/schemas/{body}"}
        ok = operation["responses"]["200"]
        assert set(ok["content"]) == {"text/event-stream"}
        for event in ("RUN_STARTED", "TEXT_MESSAGE_CONTENT", "TOOL_CALL_START", "RUN_FINISHED", "RUN_ERROR",
                      "tambo.run.awaiting_input", "tambo.component.props_delta"):
            assert event in ok["description"]
        assert "X-Run-Id" in ok["headers"]
        assert operation["responses"]["409"]["content"].keys() == {"application/problem+json"}
    assert "X-Thread-Id" in new_thread["responses"]["200"]["headers"]
    assert "X-Thread-Id" not in on_thread["responses"]["200"]["headers"]


def test_the_run_bodies_are_the_wire_models(schema):
    components = schema["components"]["schemas"]

    assert {"message", "userKey", "tools", "availableComponents", "previousRunId"} <= set(
        components["CreateRunBody"]["properties"])
    assert {"thread", "threadMetadata"} <= set(components["CreateThreadWithRunBody"]["properties"])
    assert components["CreateRunBody"]["required"] == ["message"]


def test_the_cancel_endpoint_answers_the_cancel_result(schema):
    cancel = schema["paths"]["/v1/threads/{threadId}/runs/{runId}"]["delete"]

    assert cancel["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CancelResult"}
    assert {p["name"] for p in cancel["parameters"]} == {"threadId", "runId", "userKey"}


def test_the_schema_is_json_whatever_the_client_accepts(client):
    response = client.get("/v1/openapi.json", HTTP_ACCEPT="application/yaml, */*")

    assert response.status_code == 200
    assert response.json()["openapi"].startswith("3.")


def test_the_reference_page_renders_from_local_files_only(client):
    response = client.get("/v1/docs")

    assert response.status_code == 200
    page = response.content.decode()
    assert "/v1/openapi.json" in page
    urls = re.findall(r'(?:src|href|spec-url)="([^"]+)"', page)
    assert any(url.endswith("redoc.standalone.js") for url in urls)
    assert all(url.startswith("/") and not url.startswith("//") for url in urls), urls
    assert "http://" not in page and "https://" not in page


@pytest.mark.django_db(transaction=True)
def test_the_live_server_serves_the_docs_and_their_assets(live_server_url):
    page = requests.get(live_server_url + "/v1/docs", timeout=30)
    assert page.status_code == 200
    [script] = re.findall(r'<script src="([^"]+)"', page.text)

    asset = requests.get(live_server_url + script, timeout=30)
    schema = requests.get(live_server_url + "/v1/openapi.json", timeout=30)

    assert asset.status_code == 200
    assert "javascript" in asset.headers["Content-Type"]
    assert b"Redoc" in asset.content[:2000]
    assert schema.status_code == 200 and "/v1/threads/runs" in schema.json()["paths"]


def test_the_name_and_suggestion_routes_answer_their_wire_models(schema):
    components = schema["components"]["schemas"]
    named = schema["paths"]["/threads/{threadId}/generate-name"]["post"]
    generate = schema["paths"]["/v1/threads/{threadId}/messages/{messageId}/suggestions"]["post"]
    legacy = schema["paths"]["/threads/{threadId}/messages/{messageId}/suggestions"]["get"]

    assert named["responses"]["200"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/NamedThread"}
    assert {"id", "projectId", "name", "createdAt", "updatedAt"} <= set(components["NamedThread"]["properties"])
    assert generate["requestBody"]["content"]["application/json"]["schema"] == {
        "$ref": "#/components/schemas/CreateSuggestionsBody"}
    assert components["CreateSuggestionsBody"]["properties"]["maxSuggestions"]["maximum"] == 10
    assert {"suggestions", "hasMore", "nextCursor"} <= set(components["SuggestionPage"]["properties"])
    assert legacy["responses"]["200"]["content"]["application/json"]["schema"] == {
        "type": "array", "items": {"$ref": "#/components/schemas/Suggestion"}}
    for operation in (named, generate):
        assert {"429", "502"} <= set(operation["responses"])


def test_it_describes_the_transcription_endpoint_with_its_multipart_body_and_problems(schema):
    operation = schema["paths"]["/audio/transcribe"]["post"]
    assert operation["security"] == [{"ApiKeyAuth": []}, {"BearerAuth": []}]
    body = operation["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert body["required"] == ["file"] and body["properties"]["file"] == {
        **body["properties"]["file"], "type": "string", "format": "binary"}
    assert operation["responses"]["200"]["content"] == {"text/plain": {"schema": {"type": "string"}}}
    codes = {}
    for status, answer in operation["responses"].items():
        if status != "200":
            problem_schema = answer["content"]["application/problem+json"]["schema"]
            assert problem_schema["allOf"][0] == {"$ref": "#/components/schemas/Problem"}
            codes[status] = problem_schema["allOf"][1]["properties"]["code"]["enum"]
    assert set(codes) == {"400", "401", "413", "415", "429", "501", "502", "503", "504"}
    assert codes["501"] == ["TRANSCRIPTION_UNAVAILABLE"] and codes["504"] == ["TRANSCRIPTION_TIMEOUT"]
    assert codes["503"] == ["SERVICE_UNAVAILABLE"]
    assert "INVALID_AUDIO" in codes["400"] and "TRANSCRIPTION_RATE_LIMITED" in codes["429"]


def test_every_503_it_describes_carries_retry_after(schema):
    # The README promises a Retry-After on every 503; a 503 that retrying cannot cure is another status.
    missing = [f"{method.upper()} {path}" for path, item in schema["paths"].items() for method, operation in item.items()
               if isinstance(operation, dict) and "503" in operation.get("responses", {})
               and "Retry-After" not in operation["responses"]["503"].get("headers", {})]
    assert missing == []
