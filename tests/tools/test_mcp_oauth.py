"""Protected MCP servers (docs/tools.md#protected-mcp-servers): the project's and each end user's OAuth
grants, end to end against a real MCP server behind its own authorization server
(tests/support/mcp_oauth_server.py), both started on loopback.

The person who authorises is simulated the way a browser would go: the authorization URL from the
pause (or the admin's button), the authorization server's consent page (where the test says who logs
in), then the redirect to this server's callback. The MCP server counts each tool call by the subject
of the token it came with, so a call made with the wrong user's grant is counted, not guessed.
"""
from __future__ import annotations

import urllib.parse
from collections.abc import Iterator

import pytest
import requests
from cryptography.fernet import Fernet

from tests.conftest import Api, wait_for_idle_threads
from tests.support.live import LiveServer, free_port
from tests.support.mcp_fixtures import running_oauth_mcp_server
from tests.support.run_requests import last_run_id, run, text_of, tool_results

pytestmark = pytest.mark.django_db(transaction=True)

SECRETS_KEY = Fernet.generate_key().decode()
AUTHORIZATION_REQUIRED = "tambo.mcp.authorization_required"
ASK = "Please use secure__whoami with {}"


@pytest.fixture(scope="module")
def protected() -> Iterator[str]:
    with running_oauth_mcp_server() as base:
        yield base


@pytest.fixture(scope="module")
def live(django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    port = free_port()
    server = LiveServer("mcp-oauth", {"SECRETS_KEYS": SECRETS_KEY,
                                      "MCP_OAUTH_REDIRECT_URL": f"http://127.0.0.1:{port}/mcp-auth/callback"},
                        port=port)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def oapi(live, api_key, settings) -> Iterator[Api]:
    settings.SECRETS_KEYS = [SECRETS_KEY]
    yield Api(live.url, api_key)
    wait_for_idle_threads()


def protected_server(project, base: str, auth: str):
    from tools.models import McpServer

    return McpServer.objects.create(project=project, name="secure", transport="http", url=f"{base}/mcp", auth=auth)


def stats(base: str) -> dict:
    return requests.get(f"{base}/stats", timeout=10).json()


def authorization_url(events: list[dict]) -> str:
    [pause] = [e for e in events if e["type"] == "CUSTOM" and e["name"] == AUTHORIZATION_REQUIRED]
    [server] = pause["value"]["servers"]
    assert server["serverName"] == "secure"
    return server["authorizationUrl"]


def consent(url: str, user: str) -> str:
    """Logs in as `user` at the authorization server; returns where it sends the browser back."""
    to_consent = requests.get(url, allow_redirects=False, timeout=10)
    assert to_consent.status_code == 302, to_consent.text
    back = requests.get(to_consent.headers["location"] + f"&user={user}", allow_redirects=False, timeout=10)
    assert back.status_code == 302, back.text
    return back.headers["location"]


def authorise(url: str, user: str) -> requests.Response:
    return requests.get(consent(url, user), timeout=30)


def ask(api: Api, user: str, thread_id: str | None = None) -> tuple[str, list[dict]]:
    api.user_key = user
    extra = {"previousRunId": last_run_id(api, thread_id)} if thread_id else {}
    return run(api, ASK, thread_id=thread_id, userKey=user, **extra)


def authorised_thread(api: Api, user: str) -> str:
    """A thread of `user` whose first run paused and whose user then authorised the server."""
    thread_id, events = ask(api, user)
    assert authorise(authorization_url(events), user).status_code == 200
    return thread_id


@pytest.mark.both_dbs
def test_a_users_first_run_pauses_with_the_url_and_after_the_callback_the_next_run_goes_on(oapi, project,
                                                                                              protected, live):
    from tools.models import McpToken

    protected_server(project, protected, "user")
    thread_id, events = ask(oapi, "alice")
    url = authorization_url(events)
    assert [e["type"] for e in events][-1] == "RUN_FINISHED"
    assert not tool_results(events) and "TEXT_MESSAGE_START" not in [e["type"] for e in events]
    query = dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))
    # PKCE and the resource indicator (RFC 8707) the token will be bound to.
    assert query["code_challenge_method"] == "S256" and query["resource"] == f"{protected}/mcp"
    assert stats(protected)["registrations"] == 1  # dynamic registration: the server offers no metadata document

    page = authorise(url, "alice")
    assert page.status_code == 200 and "is authorised" in page.text

    _, events = ask(oapi, "alice", thread_id)
    [result] = tool_results(events)
    assert result["content"] == "you are alice"
    assert text_of(events) == "Tool secure__whoami returned: you are alice"
    counted = stats(protected)
    assert counted["calls"] == {"alice": 1}
    assert counted["resources"] == [f"{protected}/mcp"]
    # The tokens stay on the server: not in the events, the stored thread, the vault's column or the log.
    grant = McpToken.objects.get(user_key="alice")
    seen = [str(events), oapi.get(f"/v1/threads/{thread_id}").text, grant.tokens, live.log_text(), page.text]
    for token in counted["issued"]:
        assert not any(token in text for text in seen)


@pytest.mark.both_dbs
def test_a_user_cannot_use_another_users_grant(oapi, project, protected):
    protected_server(project, protected, "user")
    authorised_thread(oapi, "alice")
    calls_before = stats(protected)["calls"]

    oapi.user_key = "bob"
    thread_id, events = ask(oapi, "bob")
    assert authorization_url(events)  # bob is asked for his own
    assert not tool_results(events)
    assert stats(protected)["calls"] == calls_before  # 0 calls made for bob, with anyone's token

    assert authorise(authorization_url(events), "bob").status_code == 200
    _, events = ask(oapi, "bob", thread_id)
    assert tool_results(events)[0]["content"] == "you are bob"


def test_an_expired_access_token_is_refreshed_and_the_new_one_stored(oapi, project, protected):
    from tools.models import McpToken

    protected_server(project, protected, "user")
    thread_id = authorised_thread(oapi, "carol")
    before = McpToken.objects.get(user_key="carol")
    McpToken.objects.filter(pk=before.pk).update(expires_at=1_000_000_000.0)  # long past
    refreshes = stats(protected).get("refreshes", 0)

    _, events = ask(oapi, "carol", thread_id)
    assert tool_results(events)[0]["content"] == "you are carol"
    assert stats(protected).get("refreshes", 0) == refreshes + 1
    after = McpToken.objects.get(pk=before.pk)
    assert after.tokens != before.tokens and after.expires_at > 1_000_000_000.0


def test_a_grant_revoked_by_api_is_asked_for_again(oapi, project, protected):
    protected_server(project, protected, "user")
    thread_id = authorised_thread(oapi, "dave")

    oapi.user_key = "dave"
    revoked = oapi.delete("/v1/mcp-servers/secure/authorizations")
    assert revoked.status_code == 200 and revoked.json() == {"serverName": "secure", "revoked": 1}
    calls = stats(protected)["calls"].get("dave", 0)
    _, events = ask(oapi, "dave", thread_id)
    assert authorization_url(events) and not tool_results(events)
    assert stats(protected)["calls"].get("dave", 0) == calls


def test_a_grant_the_provider_revoked_is_dropped_and_asked_for_again(oapi, project, protected):
    from tools.models import McpToken

    protected_server(project, protected, "user")
    thread_id = authorised_thread(oapi, "erin")
    requests.post(f"{protected}/revoke-user", params={"user": "erin"}, timeout=10)

    _, events = ask(oapi, "erin", thread_id)  # the listing is refused: the run goes on without the server
    assert not tool_results(events)
    assert not McpToken.objects.filter(user_key="erin").exists()
    _, events = ask(oapi, "erin", thread_id)
    assert authorization_url(events)


def test_a_scope_challenge_asks_the_user_again_for_the_joined_scopes(oapi, project, protected):
    from tools.models import McpToken

    protected_server(project, protected, "user")
    thread_id = authorised_thread(oapi, "gina")
    assert McpToken.objects.get(user_key="gina").scope == "read"

    _, events = run(oapi, "Please use secure__write_note with {}", thread_id=thread_id, userKey="gina",
                    previousRunId=last_run_id(oapi, thread_id))
    [refused] = tool_results(events)
    assert "needs the user's authorisation" in refused["content"]
    _, events = ask(oapi, "gina", thread_id)
    url = authorization_url(events)
    assert dict(urllib.parse.parse_qsl(urllib.parse.urlparse(url).query))["scope"].split() == ["read", "write"]
    assert authorise(url, "gina").status_code == 200

    _, events = run(oapi, "Please use secure__write_note with {}", thread_id=thread_id, userKey="gina",
                    previousRunId=last_run_id(oapi, thread_id))
    assert tool_results(events)[0]["content"] == "noted"
    assert stats(protected)["calls"]["gina:write"] == 1


def test_an_answer_naming_another_issuer_is_refused(oapi, project, protected):
    from tools.models import McpToken

    protected_server(project, protected, "user")
    _, events = ask(oapi, "frank")
    back = consent(authorization_url(events), "frank")
    forged = back.replace(urllib.parse.quote(protected, safe=""), urllib.parse.quote("http://127.0.0.1:1", safe=""))
    assert forged != back
    page = requests.get(forged, timeout=30)
    assert page.status_code == 400 and "did not come from" in page.text
    assert not McpToken.objects.filter(user_key="frank").exists()
    # The flow is used up: the genuine answer cannot be replayed after a refused one.
    assert requests.get(back, timeout=30).status_code == 400


def test_the_project_is_authorised_once_from_the_admin_and_serves_every_user(oapi, project, protected, live):
    from tests.retention.test_forget_user import staff_session
    from tools.models import McpToken

    server = protected_server(project, protected, "project")
    # Before the operator authorises it, runs leave the server out (no pause: users cannot fix it).
    _, events = ask(oapi, "alice")
    assert not [e for e in events if e["type"] == "CUSTOM" and e["name"] == AUTHORIZATION_REQUIRED]
    assert not tool_results(events)

    session = staff_session(live.url)
    start = session.get(f"{live.url}/mcp-auth/start/{server.pk}", allow_redirects=False, timeout=30)
    assert start.status_code == 302 and start.headers["location"].startswith(f"{protected}/authorize?")
    assert session.get(consent(start.headers["location"], "operator"), timeout=30).status_code == 200
    assert McpToken.objects.get(server=server).user_key == ""

    for user in ("alice", "bob"):
        oapi.user_key = user
        _, events = ask(oapi, user)
        assert tool_results(events)[0]["content"] == "you are operator"
    admin_page = session.get(f"{live.url}/admin/tools/mcpserver/{server.pk}/change/", timeout=30).text
    assert "Authorised" in admin_page
    assert not any(token in admin_page for token in stats(protected)["issued"])


def test_the_start_button_is_for_staff_only(live, project, protected, oapi):
    from tests.retention.test_forget_user import staff_session

    server = protected_server(project, protected, "project")
    anonymous = requests.get(f"{live.url}/mcp-auth/start/{server.pk}", allow_redirects=False, timeout=30)
    assert anonymous.status_code == 302 and "/admin/login/" in anonymous.headers["location"]
    page_user = staff_session(live.url, staff=False)
    assert page_user.get(f"{live.url}/mcp-auth/start/{server.pk}", allow_redirects=False,
                         timeout=30).status_code == 403


def test_mcp_reaches_a_protected_server_with_the_tokens_user_only(oapi, project, protected):
    from tests.tools.test_mcp_gateway import mcp_token, through_mcp

    protected_server(project, protected, "user")
    authorised_thread(oapi, "hana")

    async def read_mine(client):
        listed = await client.list_resources()
        return [str(r.uri) for r in listed.resources], (await client.read_resource("secure:secret://mine")).contents

    token = mcp_token(oapi, contextKey="hana").json()["mcpAccessToken"]
    uris, contents = through_mcp(oapi, token, read_mine)
    assert uris == ["secure:secret://mine"] and contents[0].text == "the note of hana"

    async def list_only(client):
        return [str(r.uri) for r in (await client.list_resources()).resources]

    calls = stats(protected)["calls"]
    ivan = mcp_token(oapi, contextKey="ivan").json()["mcpAccessToken"]
    assert through_mcp(oapi, ivan, list_only) == []  # ivan holds no grant: the server lists nothing for him
    assert stats(protected)["calls"] == calls  # and nothing was asked of it with hana's token
