"""A React app built on the official `@tambo-ai/react` 1.3.0 works unchanged against this server.

The app (tests/compat/react: its own package.json and lock, bundled with esbuild) is served from its
own origin, so every API call is a cross-origin request with the SDK's own headers, and is driven in
Chromium as a person would: a text reply, a client tool run once, a component with streamed props, a
follow-up, the thread list, a reload that reopens the thread, the automatic thread name, and a
suggestion sent; once with `userKey`, once with `userToken` (the app's own RS256 JWT, verified
through a JWKS this test serves). Every answer from the API origin and every console message is
recorded: the page must log no error and the API must answer nothing outside 2xx.
"""
from __future__ import annotations

import base64
import io
import json
import shutil
import subprocess
from pathlib import Path
from urllib.parse import urlencode

import pytest
import requests
from django.core.management import call_command
from playwright.sync_api import expect

from projects.config import ProjectSettings, project_settings_save

from tests.browser.conftest import SCREENSHOTS
from tests.conftest import Api, require_part
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import FakeOpenAI, Text
from tests.support.images import png
from tests.support.live import openai_live_server
from tests.support.mcp_fixtures import mcp_http_url  # noqa: F401 - fixture
from tests.support.rule_replies import anthropic_reply
from tests.support.static_http import StaticServer
from tests.support.user_tokens import JwksServer, access_token, rsa_key, sign_rs256

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

APP_DIR = Path(__file__).resolve().parents[1] / "compat" / "react"
SDK_VERSION = "1.3.0"
TOKEN_USER = "react-token-user"


# --- The app, its origin, and the identity provider ---------------------------------------------------

@pytest.fixture(scope="module")
def app_bundle() -> Path:
    node = shutil.which("node")
    installed = (APP_DIR / "node_modules" / "@tambo-ai" / "react" / "package.json").is_file()
    require_part(bool(node and installed), "run `npm ci` in tests/compat/react (bin/test does it)")
    built = subprocess.run([node, "build.mjs"], cwd=APP_DIR, capture_output=True, text=True, timeout=300)
    assert built.returncode == 0, f"the app's bundle failed to build:\n{built.stdout}\n{built.stderr}"
    return APP_DIR / "dist"


@pytest.fixture(scope="module")
def app_origin(app_bundle):
    """The app's own origin: another port than the API's, so the browser applies CORS to every call."""
    with StaticServer(app_bundle) as server:
        yield server.url


@pytest.fixture
def token_project(project):
    """The project verifies its app's user tokens with an identity provider's JWKS (as an admin sets it
    up with `manage.py configure_user_tokens`); yields the provider's signing key."""
    key = rsa_key()
    with JwksServer() as jwks:
        jwks.keys["react-test-key"] = key
        call_command("configure_user_tokens", project=project.name, jwks_url=jwks.url, stdout=io.StringIO())
        yield key


@pytest.fixture
def anthropic_project(project, tmp_path):
    """The project's model is the Anthropic fake (set with the project file, as an operator would),
    answering by the offline model's rules so the app's conversation stays the same; yields the fake."""
    with FakeAnthropic() as fake:
        fake.responder = anthropic_reply
        path = tmp_path / "projects.yaml"
        path.write_text(f"projects:\n  - name: {json.dumps(project.name)}\n"
                        f"    models: [{{provider: anthropic, model: claude-fake, baseUrl: '{fake.base_url}'}}]\n")
        call_command("apply_projects", str(path), stdout=io.StringIO())
        yield fake


# --- What the page did --------------------------------------------------------------------------------

class Recorder:
    """Every request and answer between the page and the API origin, and every console message."""

    def __init__(self, page, api_origin: str):
        self.api_origin = api_origin
        self.requests: list[dict] = []
        self.responses: list[tuple[str, str, int]] = []
        self.failed: list[tuple[str, str, str]] = []
        # Requests the test itself cut off by reloading the page: provoked, so not a failure.
        self.cut_off: list[tuple[str, str, str]] = []
        # Run streams the SDK closed itself after a 200 answer: it stops reading at
        # `tambo.run.awaiting_input` to run the client tool, sometimes before the server's last bytes.
        self.closed_by_sdk: list[tuple[str, str, str]] = []
        self._answered: set = set()
        self._in_flight: set = set()
        self._reloaded_over: set = set()
        self.console: list[tuple[str, str]] = []
        page.on("request", self._on_request)
        page.on("response", self._on_response)
        page.on("requestfinished", lambda request: self._in_flight.discard(request))
        page.on("requestfailed", self._on_failed)
        page.on("console", lambda message: self.console.append((message.type, message.text)))
        page.on("pageerror", lambda error: self.console.append(("pageerror", str(error))))

    def _ours(self, url: str) -> bool:
        return url.startswith(self.api_origin + "/")

    def reloading(self) -> None:
        """Call right before the test reloads the page: what is still in flight will be aborted by it."""
        self._reloaded_over |= self._in_flight

    def _on_request(self, request) -> None:
        if self._ours(request.url):
            self._in_flight.add(request)
            self.requests.append({"method": request.method, "url": request.url[len(self.api_origin):],
                                  "headers": request.headers})

    def _on_response(self, response) -> None:
        if self._ours(response.url):
            if response.ok:
                self._answered.add(response.request)
            self.responses.append((response.request.method, response.url[len(self.api_origin):], response.status))

    def _on_failed(self, request) -> None:
        self._in_flight.discard(request)
        if self._ours(request.url):
            entry = (request.method, request.url[len(self.api_origin):], request.failure or "")
            aborted = "ERR_ABORTED" in entry[2]
            if aborted and request in self._reloaded_over:
                self.cut_off.append(entry)
            elif aborted and request in self._answered and request.method == "POST" and "/runs" in entry[1]:
                self.closed_by_sdk.append(entry)
            else:
                self.failed.append(entry)

    def paths(self, method: str, fragment: str) -> list[str]:
        return [url for m, url, _ in self.responses if m == method and fragment in url]

    def summary(self) -> str:
        errors = [text for kind, text in self.console if kind in ("error", "pageerror")]
        bad = [entry for entry in self.responses if not 200 <= entry[2] < 300]
        return f"console errors: {errors}\nAPI answers outside 2xx: {bad}\nfailed requests: {self.failed}"

    def assert_clean(self, client_tool_pauses: int) -> None:
        errors = [text for kind, text in self.console if kind in ("error", "pageerror")]
        assert errors == [], f"console errors: {errors}"
        bad = [entry for entry in self.responses if not 200 <= entry[2] < 300]
        assert bad == [], f"API answers outside 2xx: {bad}"
        assert self.failed == [], f"API requests that failed in the browser: {self.failed}"
        assert len(self.closed_by_sdk) <= client_tool_pauses, f"run streams closed early: {self.closed_by_sdk}"
        v1 = [r for r in self.requests if r["url"].startswith(("/v1/", "/threads/", "/oauth/"))]
        assert v1, "the page made no API request"
        for request in v1:
            # The SDK's own headers reach the server, which is what the CORS preflight must allow.
            assert request["headers"].get("x-tambo-react-version") == SDK_VERSION, request
            assert request["headers"].get("x-api-key"), request


# --- The steps, each checked on what the user sees ----------------------------------------------------

def status(page):
    return page.get_by_test_id("status")


def assistant_texts(page):
    return page.locator("article[data-role=assistant] p.text")


def send(page, text: str) -> None:
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def wait_idle(page) -> None:
    expect(status(page)).to_have_attribute("data-idle", "true")


def open_app(page, app_origin: str, live_server_url: str, api_key: str, **identity: str) -> None:
    query = urlencode({"tamboUrl": live_server_url, "apiKey": api_key, **identity})
    page.goto(f"{app_origin}/index.html?{query}")
    expect(status(page)).to_have_attribute("data-auth", "identified")


def current_thread_id(page) -> str:
    thread_id = status(page).get_attribute("data-thread-id")
    assert thread_id and thread_id.startswith("thr_"), thread_id
    return thread_id


def step_text_reply(page, api: Api) -> str:
    send(page, "Hello from React")
    expect(page.locator("article[data-role=user] p.text").first).to_have_text("Hello from React")
    expect(assistant_texts(page).first).to_contain_text("(offline model) You said: Hello from React")
    wait_idle(page)
    thread_id = current_thread_id(page)
    stored = api.get(f"/v1/threads/{thread_id}").json()
    assert [m["role"] for m in stored["messages"]] == ["user", "assistant"]
    return thread_id


def step_client_tool(page, api: Api, thread_id: str) -> None:
    send(page, 'How many people live there? Use lookup_population {"city": "Lyon"}')
    answer = page.locator("article[data-role=assistant] p.text", has_text="Tool lookup_population returned:")
    expect(answer).to_contain_text("522250")
    wait_idle(page)
    expect(page.get_by_test_id("tool-call-count")).to_have_text("1")
    assert page.evaluate("window.__reactAppToolCalls") == [
        {"input": {"city": "Lyon"}, "result": {"city": "Lyon", "population": 522250}}]
    blocks = [b for m in api.get(f"/v1/threads/{thread_id}").json()["messages"] for b in m["content"]]
    uses = [b for b in blocks if b["type"] == "tool_use"]
    assert [(b["name"], b["input"]) for b in uses] == [("lookup_population", {"city": "Lyon"})]
    result = next(b for b in blocks if b["type"] == "tool_result")
    assert result["toolUseId"] == uses[0]["id"]
    assert json.loads(result["content"][0]["text"]) == {"city": "Lyon", "population": 522250}


def step_component(page, api: Api, thread_id: str) -> None:
    send(page, 'Show WeatherCard {"city": "Bergen", "temperatureC": 7, "conditions": "rain"}')
    card = page.get_by_test_id("weather-card").last
    expect(card.get_by_test_id("weather-city")).to_have_text("Bergen")
    expect(card.get_by_test_id("weather-temperature")).to_have_text("7")
    expect(card.get_by_test_id("weather-conditions")).to_have_text("rain")
    wait_idle(page)
    components = [b for m in api.get(f"/v1/threads/{thread_id}").json()["messages"] for b in m["content"]
                  if b["type"] == "component"]
    assert [(c["name"], c["props"]) for c in components] == [
        ("WeatherCard", {"city": "Bergen", "temperatureC": 7, "conditions": "rain"})]


def step_follow_up(page, api: Api, thread_id: str) -> None:
    send(page, "Thanks, one more question")
    expect(assistant_texts(page).last).to_contain_text("(offline model) You said: Thanks, one more question")
    wait_idle(page)
    assert current_thread_id(page) == thread_id, "a follow-up stays in the same thread"
    stored = api.get(f"/v1/threads/{thread_id}").json()
    assert stored["runStatus"] == "idle"
    assert [m for m in stored["messages"] if m["role"] == "user"][-1]["content"] == [
        {"type": "text", "text": "Thanks, one more question"}]


def thread_button(page, thread_id: str):
    return page.get_by_test_id("thread-list").locator(f"button[data-thread-id='{thread_id}']")


def step_thread_list(page, thread_id: str) -> None:
    expect(thread_button(page, thread_id)).to_be_visible()
    expect(thread_button(page, thread_id)).to_have_attribute("aria-current", "true")


def step_thread_name(page, api: Api, thread_id: str) -> None:
    # The SDK names a thread once it has three messages (its default threshold): by now it has.
    expect(thread_button(page, thread_id)).to_have_text("Hello from React")
    expect(page.get_by_test_id("thread-title")).to_have_text("Hello from React")
    assert api.get(f"/v1/threads/{thread_id}").json()["name"] == "Hello from React"


def step_reload_and_reopen(page, recorder: Recorder, thread_id: str) -> None:
    # Reload once the page has settled as a user sees it: the last answer's suggestions are shown.
    last_answer = page.locator("article[data-role=assistant]").last.get_attribute("data-message-id")
    expect(page.get_by_test_id("suggestions")).to_have_attribute("data-message-id", last_answer)
    recorder.reloading()
    page.reload()
    expect(status(page)).to_have_attribute("data-auth", "identified")
    expect(page.locator("article")).to_have_count(0)
    thread_button(page, thread_id).click()
    expect(status(page)).to_have_attribute("data-thread-id", thread_id)
    messages = page.get_by_test_id("messages")
    expect(messages.locator("article[data-role=user] p.text").first).to_have_text("Hello from React")
    expect(messages).to_contain_text("Tool lookup_population returned:")
    expect(messages.get_by_test_id("weather-city")).to_have_text("Bergen")
    expect(assistant_texts(page).last).to_contain_text("(offline model) You said: Thanks, one more question")
    expect(thread_button(page, thread_id)).to_have_text("Hello from React")
    expect(page.get_by_test_id("thread-title")).to_have_text("Hello from React")
    # History is shown, never replayed: the reopened thread runs no tool again.
    expect(page.get_by_test_id("tool-call-count")).to_have_text("0")


def step_suggestion(page, api: Api, thread_id: str) -> None:
    suggestions = page.get_by_test_id("suggestions")
    show = suggestions.get_by_role("button", name="Show WeatherCard")
    expect(show).to_be_visible()
    detailed = show.get_attribute("data-detailed")
    assert detailed and "WeatherCard" in detailed
    cards_before = page.get_by_test_id("weather-card").count()
    show.click()
    expect(page.locator("article[data-role=user] p.text").last).to_have_text(detailed)
    # The suggestion names the component, so the offline model shows it with its schema's defaults.
    expect(page.get_by_test_id("weather-card")).to_have_count(cards_before + 1)
    expect(page.get_by_test_id("weather-city").last).to_have_text("Oslo")
    wait_idle(page)
    users = [m for m in api.get(f"/v1/threads/{thread_id}").json()["messages"] if m["role"] == "user"]
    assert users[-1]["content"] == [{"type": "text", "text": detailed}]


def run_everything(page, recorder: Recorder, api: Api) -> None:
    try:
        steps(page, recorder, api)
    except AssertionError as exc:
        # What the browser saw (a CORS refusal, a 4xx) usually says more than the element that never came.
        raise AssertionError(f"{exc}\n--- what the page recorded\n{recorder.summary()}") from exc


def steps(page, recorder: Recorder, api: Api) -> None:
    thread_id = step_text_reply(page, api)
    step_client_tool(page, api, thread_id)
    step_component(page, api, thread_id)
    step_follow_up(page, api, thread_id)
    step_thread_list(page, thread_id)
    step_thread_name(page, api, thread_id)
    step_reload_and_reopen(page, recorder, thread_id)
    step_suggestion(page, api, thread_id)
    stored = api.get(f"/v1/threads/{thread_id}").json()
    assert stored["runStatus"] == "idle" and "pendingToolCallIds" not in stored
    # The SDK's own routes were used: the name by POST /threads/{id}/generate-name, suggestions on v1.
    assert recorder.paths("POST", f"/threads/{thread_id}/generate-name")
    assert recorder.paths("POST", "/suggestions")
    recorder.assert_clean(client_tool_pauses=1)


@pytest.fixture
def react_page(chromium, live_server_url, request):
    """A fresh page with its Recorder; at the end its screenshot and its API log go to test-artifacts/."""
    context = chromium.new_context(viewport={"width": 1280, "height": 800})
    context.set_default_timeout(20_000)
    page = context.new_page()
    recorder = Recorder(page, live_server_url)
    yield page, recorder
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    # The final state of each mode, for a person to look at (also after a failure).
    page.screenshot(path=str(SCREENSHOTS / f"{request.node.name}.png"), full_page=True)
    log = {"responses": recorder.responses, "failed": recorder.failed, "cut_off_by_reload": recorder.cut_off,
           "closed_by_sdk": recorder.closed_by_sdk, "console": recorder.console,
           "first_request": recorder.requests[0] if recorder.requests else None}
    (SCREENSHOTS / f"{request.node.name}.api-log.json").write_text(json.dumps(log, indent=1))
    context.close()


def test_a_react_app_with_a_user_key_chats_runs_tools_renders_components_and_reopens_threads(
        react_page, app_origin, live_server_url, api_key):
    page, recorder = react_page
    api = Api(live_server_url, api_key, user_key="react-alice")
    open_app(page, app_origin, live_server_url, api_key, userKey="react-alice")

    run_everything(page, recorder, api)

    assert all("userKey=react-alice" in r["url"] for r in recorder.requests if r["url"].startswith("/v1/"))


def test_a_react_app_on_a_project_whose_model_is_anthropic_does_the_same(
        react_page, app_origin, live_server_url, api_key, anthropic_project):
    page, recorder = react_page
    api = Api(live_server_url, api_key, user_key="react-bob")
    open_app(page, app_origin, live_server_url, api_key, userKey="react-bob")

    run_everything(page, recorder, api)

    bodies = [r.body for r in anthropic_project.requests]
    assert {r.path for r in anthropic_project.requests} == {"/v1/messages"}
    streamed = [b for b in bodies if b.get("stream")]
    blocks = [block for b in streamed for m in b["messages"] if isinstance(m["content"], list) for block in m["content"]]
    # The client tool's and the component's calls went as Messages tool_use, their results as tool_result.
    uses = {block["name"] for block in blocks if block["type"] == "tool_use"}
    assert {"lookup_population", "show_component_WeatherCard"} <= uses
    assert any(block["type"] == "tool_result" for block in blocks)
    # The thread's name and the suggestions came from the same project model, not streamed.
    assert sum(1 for b in bodies if not b.get("stream")) >= 2


def test_a_react_app_with_a_user_token_does_the_same_as_its_token_user_in_a_token_required_project(
        react_page, app_origin, live_server_url, api_key, token_project, project):
    page, recorder = react_page
    # tokenRequired: a userKey is refused (docs/abuse-and-limits.md), so the test reads the stored
    # state as the token's user too, with a bearer of its own.
    project_settings_save(project, ProjectSettings(token_required=True))
    token = sign_rs256(token_project, kid="react-test-key", user=TOKEN_USER)
    api = Api(live_server_url, api_key, user_key=None)
    api.session.headers["Authorization"] = f"Bearer {access_token(live_server_url, api_key, token)}"
    assert requests.get(live_server_url + "/v1/threads", params={"userKey": TOKEN_USER}, timeout=30,
                        headers={"x-api-key": api_key}).json()["code"] == "USER_TOKEN_REQUIRED"
    open_app(page, app_origin, live_server_url, api_key, userToken=token)

    run_everything(page, recorder, api)

    assert recorder.paths("POST", "/oauth/token")
    v1 = [r for r in recorder.requests if r["url"].startswith("/v1/")]
    assert all(r["headers"].get("authorization", "").startswith("Bearer ") for r in v1)
    assert not any("userKey=" in r["url"] for r in v1), "in token mode the SDK names no user itself"
    # The token's user owns the thread.
    assert [thread["userKey"] for thread in api.get("/v1/threads").json()["threads"]] == [TOKEN_USER]


def test_a_react_app_whose_user_token_the_project_cannot_verify_says_so_and_sends_nothing(
        react_page, app_origin, live_server_url, api_key, token_project):
    page, recorder = react_page
    stranger = rsa_key()  # not the identity provider's key: its signature cannot verify
    query = urlencode({"tamboUrl": live_server_url, "apiKey": api_key,
                       "userToken": sign_rs256(stranger, kid="react-test-key", user=TOKEN_USER)})
    page.goto(f"{app_origin}/index.html?{query}")

    expect(status(page)).to_have_attribute("data-auth", "error")
    expect(page.get_by_role("button", name="Send")).to_be_disabled()
    exchanges = [entry for entry in recorder.responses if entry[1] == "/oauth/token"]
    assert exchanges and all(status_code == 400 for _, _, status_code in exchanges), recorder.responses
    # Until a token exchange succeeds the SDK sends nothing to /v1, so no thread can be read or written.
    assert not [entry for entry in recorder.responses if entry[1].startswith("/v1/")]
    warnings = [text for kind, text in recorder.console if kind == "warning"]
    assert any(text.startswith("[TamboProvider] Token exchange failed:") and "invalid_grant" in text
               for text in warnings), warnings


def test_an_image_added_with_the_sdks_add_image_reaches_the_model_byte_for_byte(
        chromium, app_origin, api_key, tmp_path):
    picture = png(120, 80, seed=11)
    (tmp_path / "chart.png").write_bytes(picture)
    # After the answer the app asks for suggestions (and may name the thread) on the same model: the
    # fake's default reply is a valid suggestion list, so those calls succeed whenever they come.
    ideas = Text(json.dumps([{"title": "Trends", "detailed_suggestion": "Which trend does the chart show?"}]))
    with FakeOpenAI(default_reply=ideas) as fake, openai_live_server("react-image", fake.base_url, "sk-react") as server:
        fake.script(Text("A chart."))
        context = chromium.new_context(viewport={"width": 1280, "height": 800})
        context.set_default_timeout(20_000)
        page = context.new_page()
        recorder = Recorder(page, server.url)
        try:
            open_app(page, app_origin, server.url, api_key, userKey="react-alice")
            page.get_by_label("Image").set_input_files(str(tmp_path / "chart.png"))
            expect(page.get_by_test_id("staged-images")).to_have_text("1")
            send(page, "What does this chart show?")
            expect(assistant_texts(page).first).to_have_text("A chart.")
            wait_idle(page)
            expect(page.get_by_test_id("staged-images")).to_have_text("0")  # sent: the SDK unstaged it
        finally:
            page.screenshot(path=str(SCREENSHOTS / "react-add-image.png"))
            context.close()
        parts = [m for m in fake.requests[0].body["messages"] if m["role"] == "user"][-1]["content"]
        images = [p for p in parts if p["type"] == "image_url"]
        assert len(images) == 1
        header, data = images[0]["image_url"]["url"].split(",", 1)
        assert header == "data:image/png;base64"
        assert base64.b64decode(data) == picture
        assert {"type": "text", "text": "What does this chart show?"} in parts
        bad = [entry for entry in recorder.responses if not 200 <= entry[2] < 300]
        assert bad == [], bad


def test_stop_then_suggestions_in_a_react_app_answers_every_request_and_logs_no_error(
        react_page, app_origin, live_server_url, api_key):
    """Stop (the SDK's cancelRun: a DELETE of the run), after which the SDK asks at once for the stopped
    answer's suggestions: the cancel is stored before the DELETE answers, so that message is found
    (it was 404 MESSAGE_NOT_FOUND, issue 35). Three times, then a plain message."""
    page, recorder = react_page
    open_app(page, app_origin, live_server_url, api_key, userKey="react-stopper")
    answers = page.locator("article[data-role=assistant]")
    for round_ in range(3):
        send(page, f"!slow {round_}")
        expect(answers).to_have_count(round_ + 1)
        expect(answers.last).to_contain_text("word3")
        with page.expect_response(lambda r: "/suggestions" in r.url) as asked:
            page.get_by_role("button", name="Stop").click()
        assert asked.value.ok, (asked.value.status, asked.value.text())
        wait_idle(page)
    send(page, "after the stops")
    expect(assistant_texts(page).last).to_contain_text("(offline model) You said: after the stops")
    wait_idle(page)
    thread_id = current_thread_id(page)
    stored = Api(live_server_url, api_key, "react-stopper").get(f"/v1/threads/{thread_id}").json()
    assert [m["content"][0]["text"] for m in stored["messages"] if m["role"] == "user"] == [
        "!slow 0", "!slow 1", "!slow 2", "after the stops"]
    assert recorder.paths("DELETE", "/runs/") and recorder.paths("GET", "/suggestions") + recorder.paths(
        "POST", "/suggestions")
    recorder.assert_clean(client_tool_pauses=3)


# --- The MCP panel (mcp.html): the project's prompts and resources through /mcp ---------------------

def test_a_react_app_lists_and_reads_the_projects_mcp_prompts_and_resources_through_the_sdks_provider(
        react_page, app_origin, live_server_url, api_key, project, mcp_http_url):  # noqa: F811
    """`@tambo-ai/react`'s TamboMcpProvider fetches a token and reaches `/mcp`
    (docs/tools.md#the-browsers-mcp-endpoint): the project's real MCP server is listed and read through
    us, never by the browser."""
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="demo", transport="http", url=mcp_http_url)
    page, recorder = react_page
    everything: list[str] = []
    page.on("request", lambda request: everything.append(request.url))
    query = urlencode({"tamboUrl": live_server_url, "apiKey": api_key, "userKey": "react-mcp"})
    page.goto(f"{app_origin}/mcp.html?{query}")

    prompts = page.get_by_test_id("mcp-prompts").locator("button")
    expect(prompts).to_have_count(1)
    # The SDK prefixes its server's key (`tambo-<hash of the token>`), then come ours.
    prompt_name = prompts.first.get_attribute("data-name")
    assert prompt_name.startswith("tambo-") and prompt_name.endswith(":demo:summarise"), prompt_name
    resources = page.get_by_test_id("mcp-resources").locator("button")
    expect(resources).to_have_count(2)
    uris = sorted(button.get_attribute("data-uri").split(":", 1)[1] for button in resources.all())
    assert uris == ["demo:image://red-dot", "demo:memo://note"]

    prompts.first.click()
    page.get_by_label("topic").fill("MCP")
    page.get_by_role("button", name="Get prompt").click()
    messages = page.get_by_test_id("mcp-prompt-messages")
    expect(messages).to_have_attribute("data-loaded", "true")
    expect(messages.locator("li")).to_have_text(["Please summarise MCP in one line."])
    expect(messages.locator("li").first).to_have_attribute("data-role", "user")

    page.locator("button[data-uri$=':demo:memo://note']").click()
    note = page.get_by_test_id("mcp-resource")
    expect(note).to_have_attribute("data-loaded", "true")
    expect(note.locator("pre")).to_have_text("the note says: buy milk")
    expect(note.locator("pre")).to_have_attribute("data-mime-type", "text/plain")

    # Every answer is a success but the transport's probe for a server stream (GET /mcp after the
    # handshake), which this stateless server declines with 405 as streamable HTTP allows and the SDK
    # expects; Chromium logs each 4xx answer on the console, so that line comes once per probe, and
    # nothing else does (no SDK, React or app error).
    bad = [entry for entry in recorder.responses if not 200 <= entry[2] < 300]
    assert bad and all(entry == ("GET", "/mcp", 405) for entry in bad), bad
    declined = "Failed to load resource: the server responded with a status of 405 (Method Not Allowed)"
    errors = [text for kind, text in recorder.console if kind in ("error", "pageerror")]
    assert errors == [declined] * len(bad), f"console errors: {errors}"
    # The transport reads the status of the bodiless answers (202 to its notification, 405 to the
    # probe) and cancels their bodies, which Chromium reports as aborted: those, and no other.
    accepted = [entry for entry in recorder.responses if entry[2] == 202]
    assert accepted == [("POST", "/mcp", 202)], recorder.responses
    cancelled = sorted((method, url) for method, url, why in recorder.failed if "ERR_ABORTED" in why)
    assert len(cancelled) == len(recorder.failed), recorder.summary()
    assert cancelled == sorted([("POST", "/mcp")] * len(accepted) + [("GET", "/mcp")] * len(bad)), recorder.summary()
    # The page talks to its own origin and to us only: the MCP server is reached by the server.
    strangers = [url for url in everything if not url.startswith((app_origin + "/", live_server_url + "/"))]
    assert strangers == [], strangers
    api_calls = [(r["method"], r["url"].split("?")[0]) for r in recorder.requests]
    assert ("POST", "/auth/mcp/access-token") in api_calls
    mcp_posts = [r for r in recorder.requests if r["method"] == "POST" and r["url"] == "/mcp"]
    assert mcp_posts and all(r["headers"].get("authorization", "").startswith("Bearer ") for r in mcp_posts)
    assert {path for _, path in api_calls} <= {"/auth/mcp/access-token", "/mcp"}, api_calls
