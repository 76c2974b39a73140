"""`POST /auth/mcp/access-token` and `/mcp` (docs/tools.md#the-browsers-mcp-endpoint): the project's MCP
servers' prompts and resources through one MCP endpoint, reached with the `mcp` package's own client
over streamable HTTP, as the browser's MCP provider reaches it."""
from __future__ import annotations

import asyncio

import httpx2
import pytest
import requests
from mcp import Client, MCPError
from mcp.client.streamable_http import streamable_http_client

from tests.support.mcp_fixtures import mcp_http_url  # noqa: F401 - fixture

pytestmark = pytest.mark.django_db(transaction=True)


def mcp_token(api, **body) -> requests.Response:
    return api.post("/auth/mcp/access-token", body)


async def _through_mcp(base_url: str, token: str, job):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode="legacy") as client:
            return await job(client)


def through_mcp(api, token: str, job):
    return asyncio.run(_through_mcp(api.base_url, token, job))


def test_a_project_without_mcp_servers_gets_no_token(api):
    answer = mcp_token(api, contextKey="alice")
    assert (answer.status_code, answer.json()) == (201, {})


def test_prompts_and_resources_of_the_projects_servers_are_listed_and_read(api, project, mcp_http_url):  # noqa: F811
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="demo", transport="http", url=mcp_http_url)
    answer = mcp_token(api, contextKey="alice")
    assert answer.status_code == 201
    token = answer.json()
    assert token["hasSession"] is False and set(token) == {"mcpAccessToken", "expiresAt", "hasSession"}

    async def browse(client):
        prompts = await client.list_prompts()
        resources = await client.list_resources()
        prompt = await client.get_prompt("demo:summarise", {"topic": "MCP"})
        note = await client.read_resource("demo:memo://note")
        return prompts, resources, prompt, note

    prompts, resources, prompt, note = through_mcp(api, token["mcpAccessToken"], browse)
    assert [p.name for p in prompts.prompts] == ["demo:summarise"]
    assert {str(r.uri) for r in resources.resources} == {"demo:memo://note", "demo:image://red-dot"}
    assert prompt.messages[0].content.text == "Please summarise MCP in one line."
    assert note.contents[0].text == "the note says: buy milk"


def test_a_thread_bound_token_names_a_thread_of_the_project(api, project, other_project_key, mcp_http_url):  # noqa: F811
    from tests.conftest import Api
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="demo", transport="http", url=mcp_http_url)
    thread_id = api.post("/v1/threads", {"userKey": "alice"}).json()["id"]
    bound = mcp_token(api, threadId=thread_id)
    assert bound.status_code == 201 and bound.json()["hasSession"] is True
    assert mcp_token(api, threadId="thr_nope").status_code == 404
    # Another project's key does not reach this project's thread.
    assert mcp_token(Api(api.base_url, other_project_key), threadId=thread_id).status_code in (201, 404)
    assert mcp_token(api).status_code == 400  # sessionless needs a contextKey (or a user token)


def test_mcp_refuses_a_missing_or_forged_token(api, project, mcp_http_url):  # noqa: F811
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="demo", transport="http", url=mcp_http_url)
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert requests.post(f"{api.base_url}/mcp", json=ping, timeout=30).status_code == 401
    token = mcp_token(api, contextKey="alice").json()["mcpAccessToken"]
    forged = token[:-2] + ("AA" if not token.endswith("AA") else "BB")
    assert requests.post(f"{api.base_url}/mcp", json=ping, timeout=30,
                         headers={"Authorization": f"Bearer {forged}"}).status_code == 401
    answer = requests.post(f"{api.base_url}/mcp", json=ping, timeout=30, headers={"Authorization": f"Bearer {token}"})
    assert answer.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}

    async def unknown(client):
        try:
            await client.read_resource("nowhere:memo://note")
        except MCPError as exc:
            return exc.message

    assert through_mcp(api, token, unknown) == "Name a prompt or resource as <server>:<name>, as listed."
