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


async def _through_mcp(base_url: str, token: str, job, mode: str):
    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:
        async with Client(streamable_http_client(f"{base_url}/mcp", http_client=http), mode=mode) as client:
            return await job(client)


def through_mcp(api, token: str, job, mode: str = "legacy"):
    return asyncio.run(_through_mcp(api.base_url, token, job, mode))


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
        prompts = await client.list_prompts()
        prompt = await client.get_prompt("demo:summarise", {"topic": "MCP"})
        note = await client.read_resource("demo:memo://note")
        # Listed as empty, not refused: @tambo-ai/react's provider lists every server's tools.
        assert (await client.list_tools()).tools == []
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


def test_a_2026_client_discovers_mcp_statelessly_then_lists_and_reads(api, project, mcp_http_url):  # noqa: F811
    """The package's client in `auto` mode probes `server/discover` (2026-07-28) and falls back to the
    `initialize` handshake only if it is refused: here it adopts 2026-07-28, then lists and reads, each
    request in its own envelope, through the package's stateless entry."""
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="demo", transport="http", url=mcp_http_url)
    token = mcp_token(api, contextKey="alice").json()["mcpAccessToken"]

    async def browse(client):
        discovered = client.session.discover_result
        prompt = await client.get_prompt("demo:summarise", {"topic": "MCP"})
        note = await client.read_resource("demo:memo://note")
        resources = await client.list_resources()
        prompts = await client.list_prompts()
        try:
            await client.read_resource("nowhere:memo://note")
        except MCPError as exc:
            refused = exc.message
        return (client.protocol_version, client.session.initialize_result, discovered, prompt, note, resources,
                prompts, refused)

    answers = through_mcp(api, token, browse, mode="auto")
    version, initialized, discovered, prompt, note, resources, prompts, refused = answers
    assert (version, initialized) == ("2026-07-28", None), "discovered, no initialize handshake"
    assert "2026-07-28" in discovered.supported_versions
    assert discovered.capabilities.prompts is not None and discovered.capabilities.resources is not None
    assert prompt.messages[0].content.text == "Please summarise MCP in one line."
    assert note.contents[0].text == "the note says: buy milk"
    assert {str(r.uri) for r in resources.resources} == {"demo:memo://note", "demo:image://red-dot"}
    assert [p.name for p in prompts.prompts] == ["demo:summarise"]
    assert (prompts.ttl_ms, prompts.cache_scope) == (0, "private")  # the user's, read afresh each time
    assert refused == "Name a prompt or resource as <server>:<name>, as listed."


def test_server_discover_on_the_wire_is_the_packages_stateless_answer(api, project, mcp_http_url):  # noqa: F811
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="demo", transport="http", url=mcp_http_url)
    token = mcp_token(api, contextKey="alice").json()["mcpAccessToken"]
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientInfo": {"name": "probe", "version": "0"},
            "io.modelcontextprotocol/clientCapabilities": {}}
    answer = requests.post(f"{api.base_url}/mcp", timeout=30, json={
        "jsonrpc": "2.0", "id": 7, "method": "server/discover", "params": {"_meta": meta}}, headers={
        "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "server/discover",
        "Accept": "application/json, text/event-stream"})
    assert answer.status_code == 200 and "Mcp-Session-Id" not in answer.headers
    result = answer.json()["result"]
    assert result["resultType"] == "complete" and "2026-07-28" in result["supportedVersions"]
    assert result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"] == "tambo-django"
    # An unknown revision is the package's -32022 naming the supported ones, not a handshake answer.
    unknown = requests.post(f"{api.base_url}/mcp", timeout=30, json={
        "jsonrpc": "2.0", "id": 8, "method": "server/discover",
        "params": {"_meta": {**meta, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}}, headers={
        "Authorization": f"Bearer {token}", "MCP-Protocol-Version": "2099-01-01", "Mcp-Method": "server/discover",
        "Accept": "application/json, text/event-stream"})
    assert unknown.json()["error"]["code"] == -32022, unknown.text
    assert "2026-07-28" in unknown.json()["error"]["data"]["supported"]
