"""The API reference names every operation in words, and describes the gateway too."""
import re

import pytest

pytestmark = pytest.mark.django_db


@pytest.fixture
def schema(client) -> dict:
    return client.get("/v1/openapi.json").json()


def operations(schema):
    for path, methods in schema["paths"].items():
        for method, operation in methods.items():
            if method in ("get", "post", "put", "patch", "delete"):
                yield path, method, operation


def test_every_operation_has_a_summary_in_words(schema):
    for path, method, operation in operations(schema):
        summary = operation.get("summary", "")
        assert summary, f"{method} {path} has no summary"
        assert " " in summary and not re.fullmatch(r"[\w]+", summary), f"{method} {path}: {summary!r}"
        assert summary != operation.get("operationId")


def test_the_gateway_is_in_the_reference(schema):
    assert set(schema["paths"]["/api/chat/completions"]) == {"post"}
    assert "model_not_found" in schema["paths"]["/api/chat/completions"]["post"]["responses"]["400"]["description"]
    assert schema["paths"]["/api/models"]["get"]["summary"] == "List the models the gateway allows"
    assert "GatewayKey" in schema["components"]["securitySchemes"]
