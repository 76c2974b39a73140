"""`GET /api/models`: the gateway's allow-list in OpenAI's shape, read by the official client."""
from __future__ import annotations

import openai
import pytest

from tests.gateway.wire import openai_client

pytestmark = pytest.mark.django_db(transaction=True)


def test_the_official_client_lists_and_retrieves_the_allowed_models(live_server_url, api_key):
    client = openai_client(live_server_url, api_key)

    models = list(client.models.list())

    assert [m.id for m in models] == ["offline"]
    assert models[0].object == "model" and isinstance(models[0].created, int)
    assert client.models.retrieve("offline").id == "offline"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("gpt-9")


def test_listing_models_needs_a_project_key(live_server_url):
    client = openai_client(live_server_url, "tk_not_a_key")

    with pytest.raises(openai.AuthenticationError):
        client.models.list()


def test_configured_aliases_are_listed_with_the_default_first(client, api_key, settings):
    settings.GATEWAY_MODELS = {"gpt-4o": "openai:gpt-4o", "a-small": "openai:gpt-4o-mini"}
    settings.GATEWAY_DEFAULT_MODEL = "gpt-4o"

    answer = client.get("/api/models", HTTP_X_API_KEY=api_key).json()

    assert answer["object"] == "list"
    assert [(m["id"], m["owned_by"]) for m in answer["data"]] == [
        ("gpt-4o", "openai"), ("a-small", "openai"), ("offline", "tambo-django")]
