"""Every route against every project rule that applies to it, generated from the URL configuration
(issue 32, docs/abuse-and-limits.md).

Each route of `tambo_project/urls.py` is declared below, by name (the pattern itself for an unnamed
one), with the rules that apply to it, or as exempt with the reason. The matrix walks the resolver:
a route nobody declared fails with its name, so a new route cannot skip the project's rules unseen.
Each case is named `<route>:<method>-<rule>`; requests go over HTTP to the live server (offline model).
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Callable

import pytest
import requests
from django.urls import URLPattern, URLResolver, get_resolver

from projects import limits
from projects.config import Limits, ProjectSettings, TranscriptionSpec, project_settings_save
from projects.models import ApiKey
from tests.support.fake_openai import Text
from tests.support.user_tokens import configure_hs256, sign_hs256

pytestmark = pytest.mark.django_db(transaction=True)

APP = "https://app.example"
EVIL = "https://evil.example"
_ids = itertools.count()
HI = {"role": "user", "content": [{"type": "text", "text": "hi"}]}

# The rules. Origin, token and key rules hold on every route that finds a caller; the others where a
# model is called (a run, a name, suggestions, a completion, a transcription).
ORIGIN_REFUSED, ORIGIN_ALLOWED, NO_ORIGIN = "origin-refused", "origin-allowed", "no-origin"
TOKEN_REQUIRED, REVOKED_KEY = "token-required", "revoked-key"
RATE_LIMIT, TOKEN_BUDGET, ALLOWED_MODEL, CONTEXT_BUDGET = "rate-limit", "token-budget", "allowed-model", "context-budget"
USAGE_RECORDED = "usage-recorded"
CALLER = (ORIGIN_REFUSED, ORIGIN_ALLOWED, NO_ORIGIN, REVOKED_KEY)
USER_CALLER = CALLER + (TOKEN_REQUIRED,)
MODEL_CALL = (RATE_LIMIT, TOKEN_BUDGET, USAGE_RECORDED)


@dataclass
class Scene:
    """A project with a key and one finished run on alice's thread; `send` makes the route's request."""

    base_url: str
    key: str
    project: object
    thread_id: str
    run_id: str
    message_id: str  # the run's answer
    fake: object = None
    origin: str | None = None

    def headers(self) -> dict:
        headers = {"x-api-key": self.key}
        if self.origin is not None:
            headers["Origin"] = self.origin
        return headers

    def call(self, method: str, path: str, **kwargs) -> requests.Response:
        path = path.format(thread=self.thread_id, run=self.run_id, message=self.message_id)
        return requests.request(method, self.base_url + path, headers={**self.headers(), **kwargs.pop("headers", {})},
                                timeout=30, **kwargs)


@dataclass(frozen=True)
class Route:
    """One method of one route: how to call it so that it succeeds (`ok`: the status, and the code of
    an answer that is a refusal further on, past every rule here), and which rules apply."""

    send: Callable[..., requests.Response]  # send(scene, **overrides)
    ok: int
    rules: tuple[str, ...]
    ok_code: str | None = None
    usage_kind: str | None = None  # the kind of the usage row a successful call records
    setup: Callable[[Scene], None] | None = None


@dataclass(frozen=True)
class Exempt:
    reason: str
    methods: tuple[str, ...] = field(default=())


def _run_new(s: Scene, user="alice", model=None, text="hi"):
    body = {"userKey": user, "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
    if model:
        body["model"] = model
    return s.call("POST", "/v1/threads/runs", json=body)


def _run_on(s: Scene, user="alice", model=None, text="hi"):
    body = {"userKey": user, "previousRunId": s.run_id,
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
    if model:
        body["model"] = model
    return s.call("POST", "/v1/threads/{thread}/runs", json=body)


def _agui(s: Scene, user="alice", model=None, text="hi"):
    # A new client thread each call, so each one's message is new.
    return s.call("POST", "/v1/agui", json={
        "threadId": f"client-{next(_ids)}", "runId": "r1", "tools": [], "context": [], "state": {},
        "messages": [{"id": "m1", "role": "user", "content": text}], "forwardedProps": {"userKey": user}})


def _completion(s: Scene, user=None, model=None, text="hi"):
    return s.call("POST", "/api/chat/completions",
                  json={"model": model or "offline", "messages": [{"role": "user", "content": text}]})


def _response(s: Scene, user=None, model=None, text="hi"):
    return s.call("POST", "/api/responses", json={"model": model or "offline", "input": text})


def _transcription_setup(s: Scene) -> None:
    s.fake.script(Text("hello"))
    project_settings_save(s.project, ProjectSettings(**{**_settings(s.project), "transcription": TranscriptionSpec(
        model="whisper-1", base_url=s.fake.base_url)}))


def _settings(project) -> dict:
    from projects.config import project_settings
    return dict(project_settings(project))


def _get(path: str):
    return lambda s, user="alice", **_: s.call("GET", path, params={"userKey": user})


def _with_user(method: str, path: str, body: dict | None = None):
    return lambda s, user="alice", **_: s.call(method, path, params={"userKey": user},
                                               json=None if body is None else {**body, "userKey": user})


def _mcp_server_setup(s: Scene) -> None:
    from tools.models import McpServer

    McpServer.objects.get_or_create(project=s.project, name="secure", defaults={
        "transport": "http", "url": "http://127.0.0.1:9/mcp", "auth": "user"})


def _open_stream(path: str):
    """A stream that stays open (the live thread stream): its status and head only, then closed."""
    def send(s, user="alice", **_):
        response = s.call("GET", path, params={"userKey": user}, stream=True)
        if response.status_code == 200:
            response.close()
            response._content, response._content_consumed = b"", True
        return response
    return send


# Keyed by route name (namespace:name), and by method for routes with several.
ROUTES: dict[str, dict[str, Route] | Exempt] = {
    "thread-runs": {"POST": Route(_run_new, 200, USER_CALLER + MODEL_CALL + (ALLOWED_MODEL, CONTEXT_BUDGET),
                                  usage_kind="run")},
    "runs": {"POST": Route(_run_on, 200, USER_CALLER + MODEL_CALL + (ALLOWED_MODEL, CONTEXT_BUDGET), usage_kind="run")},
    # Cancelling the finished run: RUN_NOT_FOUND means the caller and the thread passed.
    "run": {"DELETE": Route(_with_user("DELETE", "/v1/threads/{thread}/runs/{run}"), 404, USER_CALLER,
                            ok_code="RUN_NOT_FOUND"),
            "GET": Route(_get("/v1/threads/{thread}/runs/{run}"), 200, USER_CALLER)},
    "thread-events": {"GET": Route(_open_stream("/v1/threads/{thread}/events"), 200, USER_CALLER)},
    "run-events": {"GET": Route(_get("/v1/threads/{thread}/runs/{run}/events"), 200, USER_CALLER)},
    # AG-UI names no model: the project's first one answers.
    "agui": {"POST": Route(_agui, 200, USER_CALLER + MODEL_CALL + (CONTEXT_BUDGET,), usage_kind="run")},
    "threads": {"GET": Route(_get("/v1/threads"), 200, USER_CALLER),
                "POST": Route(_with_user("POST", "/v1/threads", {}), 201, USER_CALLER)},
    "thread": {"GET": Route(_get("/v1/threads/{thread}"), 200, USER_CALLER),
               "PATCH": Route(_with_user("PATCH", "/v1/threads/{thread}", {"name": "n"}), 200, USER_CALLER),
               "DELETE": Route(_with_user("DELETE", "/v1/threads/{thread}"), 204, USER_CALLER)},
    "messages": {"GET": Route(_get("/v1/threads/{thread}/messages"), 200, USER_CALLER)},
    "message": {"GET": Route(_get("/v1/threads/{thread}/messages/{message}"), 200, USER_CALLER)},
    # The thread holds no component: reaching COMPONENT_NOT_FOUND means the caller and the thread passed.
    "component-state": {"POST": Route(_with_user("POST", "/v1/threads/{thread}/components/c1/state", {"state": {}}),
                                      404, USER_CALLER, ok_code="COMPONENT_NOT_FOUND")},
    "suggestions": {"GET": Route(_get("/v1/threads/{thread}/messages/{message}/suggestions"), 200, USER_CALLER),
                    "POST": Route(_with_user("POST", "/v1/threads/{thread}/messages/{message}/suggestions", {}),
                                  200, USER_CALLER + MODEL_CALL, usage_kind="suggestions")},
    "legacy-suggestions": {
        "GET": Route(_get("/threads/{thread}/messages/{message}/suggestions"), 200, USER_CALLER),
        "POST": Route(_with_user("POST", "/threads/{thread}/messages/{message}/suggestions", {}),
                      200, USER_CALLER + MODEL_CALL, usage_kind="suggestions")},
    "generate-name": {"POST": Route(_with_user("POST", "/threads/{thread}/generate-name"), 200,
                                    USER_CALLER + MODEL_CALL, usage_kind="name")},
    # The gateway names no end user (docs/gateway): tokenRequired does not apply to it.
    "gateway-chat-completions": {"POST": Route(_completion, 200, CALLER + MODEL_CALL + (ALLOWED_MODEL,),
                                               usage_kind="gateway")},
    "gateway-responses": {"POST": Route(_response, 200, CALLER + MODEL_CALL + (ALLOWED_MODEL,), usage_kind="gateway")},
    "gateway-models": {"GET": Route(lambda s, **_: s.call("GET", "/api/models"), 200, CALLER)},
    # The SDK's getCurrent(): the key's project.
    "project-current": {"GET": Route(lambda s, **_: s.call("GET", "/projects"), 200, CALLER)},
    "gateway-model": {"GET": Route(lambda s, **_: s.call("GET", "/api/models/offline"), 200, CALLER)},
    "audio-transcribe": {"POST": Route(
        lambda s, user="alice", **_: s.call("POST", "/audio/transcribe", params={"userKey": user},
                                            files={"file": ("a.wav", b"RIFF" + bytes(64), "audio/wav")}),
        200, USER_CALLER + MODEL_CALL, usage_kind="transcription", setup=_transcription_setup)},
    # The exchange's answers are OAuth's: it is checked for the origin and the key in its own shape below.
    "oauth-token": Exempt("OAuth's answer shape; its origin and key checks: "
                          "tests/projects/test_access_settings.py::test_the_bearer_and_the_exchange_are_checked_too"),
    "healthz": Exempt("no caller, no project"),
    "favicon": Exempt("a redirect to the static icon; no caller, no project"),
    "metrics": Exempt("the operator's scrape; no project"),
    "openapi": Exempt("the public API description"),
    "api-docs": Exempt("the public API description"),
    "chat": Exempt("the page's HTML; its data comes through the API routes above, with the session"),
    "login": Exempt("the page's login form"),
    "logout": Exempt("the page's logout"),
    "admin": Exempt("Django's admin: staff sessions, no project key"),
    "^api/(?P<rest>.*)$": Exempt("the gateway's 404 for an unknown path"),
    "^(?:projects/|registry(?:/|$)|storage/presign$)": Exempt(
        "the SDK's older routes: a JSON 404 naming what to use instead, reading nothing of a project"),
    # Revoking MCP grants by API (docs/tools.md#protected-mcp-servers): none held, so 0 revoked.
    "mcp-grants-revoke": {"DELETE": Route(_with_user("DELETE", "/v1/mcp-servers/secure/authorizations"), 200,
                                          USER_CALLER, setup=_mcp_server_setup)},
    # A project with an MCP server gets a token; `{}` without one (the caller passed either way).
    "mcp-access-token": {"POST": Route(
        lambda s, user="alice", **_: s.call("POST", "/auth/mcp/access-token", json={"contextKey": user}), 201,
        USER_CALLER, setup=_mcp_server_setup)},
    "mcp": Exempt("its caller is a 15-minute token of /auth/mcp/access-token, which applied the project's rules; "
                  "tests/tools/test_mcp_gateway.py"),
    "mcp-oauth-callback": Exempt("the authorization server sends the browser back: no caller; the flow's one-time "
                                 "state names the server and the user (tests/tools/test_mcp_oauth.py)"),
    "mcp-oauth-start": Exempt("the admin's staff session only: "
                              "tests/tools/test_mcp_oauth.py::test_the_start_button_is_for_staff_only"),
    "user-forget": Exempt("the admin's staff session only, a project key is refused 403: "
                          "tests/retention/test_forget_user.py::test_only_the_admins_staff_may_forget_a_user"),
}


def _walk(resolver: URLResolver, prefix: str = "", namespace: str | None = None):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            inner = entry.namespace or namespace
            if entry.namespace == "admin" or (namespace == "admin"):
                yield "admin", prefix + str(entry.pattern)
                continue
            yield from _walk(entry, prefix + str(entry.pattern), inner)
        elif isinstance(entry, URLPattern):
            yield entry.name or str(entry.pattern), prefix + str(entry.pattern)


def _routes() -> dict[str, str]:
    return dict(_walk(get_resolver()))


# Holes known and not yet closed, each failing its case until it is (strict: a fix must remove it).
KNOWN_HOLES: dict[tuple[str, str, str], str] = {}


def _cases(routes: dict[str, str], declared_routes: dict):
    for name in sorted(routes):
        declared = declared_routes.get(name)
        if declared is None:
            yield pytest.param(name, None, None, id=f"{name}-undeclared")
        elif isinstance(declared, Exempt):
            continue
        else:
            for method, route in declared.items():
                for rule in route.rules:
                    hole = KNOWN_HOLES.get((name, method, rule))
                    marks = [pytest.mark.xfail(reason=hole, strict=True)] if hole else []
                    yield pytest.param(name, method, rule, id=f"{name}:{method}-{rule}", marks=marks)


def test_every_declared_route_exists():
    stale = sorted(set(ROUTES) - set(_routes()))
    assert not stale, f"declared in ROUTES but not in the URL configuration: {stale}"


def test_a_route_nobody_declared_is_a_failing_case_named_after_it():
    routes = {**_routes(), "brand-new-route": "v1/brand-new"}

    ids = [case.id for case in _cases(routes, ROUTES)]

    assert "brand-new-route-undeclared" in ids
    assert "thread-runs:POST-origin-refused" in ids and not any(i.startswith("healthz") for i in ids)


# --- the scene -------------------------------------------------------------------------------------

@pytest.fixture
def scene(live_server_url, project, api_key, fake_openai) -> Scene:
    # No run rate until a rule sets one (the server's default would have counted the scene's own run).
    _configure(project, limits=Limits(runs_per_minute=0))
    started = requests.post(live_server_url + "/v1/threads/runs", headers={"x-api-key": api_key}, timeout=30,
                            json={"userKey": "alice", "message": HI})
    assert started.status_code == 200, started.text
    thread_id, run_id = started.headers["X-Thread-Id"], started.headers["X-Run-Id"]
    thread = requests.get(f"{live_server_url}/v1/threads/{thread_id}", params={"userKey": "alice"},
                          headers={"x-api-key": api_key}, timeout=30).json()
    answer = [m for m in thread["messages"] if m["role"] == "assistant"][-1]
    return Scene(live_server_url, api_key, project, thread_id, run_id, answer["id"], fake=fake_openai)


def _configure(project, **changes) -> None:
    project_settings_save(project, ProjectSettings(**{**_settings(project), **changes}))


def _refusal(response: requests.Response) -> tuple[int, str | None]:
    """(status, code) of an answer in any route's shape: problem+json, OpenAI's error object."""
    try:
        body = response.json()
    except ValueError:
        return response.status_code, None
    if isinstance(body, dict) and isinstance(body.get("error"), dict):
        code = body["error"].get("code")
    else:
        code = body.get("code") if isinstance(body, dict) else None
    # The gateway's OpenAI-shaped errors carry the same codes in lower case (core/error_shapes.py).
    return response.status_code, code.upper() if isinstance(code, str) else None


def _served(route: Route, response: requests.Response, label: str) -> None:
    status, code = _refusal(response)
    assert status == route.ok and (route.ok_code is None or code == route.ok_code), \
        f"{label}: expected {route.ok} {route.ok_code or ''}, got {status} {response.text[:300]}"


def _refused(response: requests.Response, status: int, codes: set[str], label: str) -> None:
    got_status, got_code = _refusal(response)
    assert (got_status, got_code in codes) == (status, True), \
        f"{label}: expected {status} {sorted(codes)}, got {got_status} {response.text[:300]}"


@pytest.mark.parametrize(("name", "method", "rule"), list(_cases(_routes(), ROUTES)))
def test_route_rule(scene: Scene, name: str, method: str | None, rule: str | None):
    assert method is not None, (
        f"route {name!r} ({_routes()[name]}) declares no rules: add it to ROUTES in tests/test_route_rules.py "
        "with the project rules that apply to it (or as Exempt, with the reason)")
    route = ROUTES[name][method]
    label = f"{name} {method} / {rule}"
    if route.setup is not None:
        route.setup(scene)
    expect_served = _apply(rule, route, scene)
    response = route.send(scene)
    if expect_served:
        _served(route, response, label)
    if rule == ORIGIN_REFUSED:
        _refused(response, 403, {"ORIGIN_NOT_ALLOWED"}, label)
    elif rule == TOKEN_REQUIRED:
        _refused(response, 401, {"USER_TOKEN_REQUIRED"}, label)
    elif rule == REVOKED_KEY:
        _refused(response, 401, {"UNAUTHORIZED", "INVALID_API_KEY"}, label)
    elif rule == RATE_LIMIT:
        _served(route, response, label + " (the first call)")
        _refused(route.send(scene), 429, {"RATE_LIMITED"}, label)
    elif rule == TOKEN_BUDGET:
        _refused(response, 429, {"BUDGET_EXCEEDED"}, label)
    elif rule == ALLOWED_MODEL:
        _refused(route.send(scene, model="not-offered"), 400, {"MODEL_NOT_ALLOWED", "MODEL_NOT_FOUND"}, label)
    elif rule == CONTEXT_BUDGET:
        _refused(route.send(scene, text="word " * 2000), 400, {"CONTEXT_TOO_LARGE"}, label)
    elif rule == USAGE_RECORDED:
        from telemetry.models import Usage

        assert Usage.objects.filter(project=scene.project, kind=route.usage_kind).exists(), \
            f"{label}: no {route.usage_kind} usage recorded"
    if route.setup is not None and scene.fake is not None:
        scene.fake._script.clear()


def _apply(rule: str, route: Route, scene: Scene) -> bool:
    """Sets the project up for `rule`; True when the route's first call must then be served."""
    if rule == ORIGIN_REFUSED:
        _configure(scene.project, allowed_origins=[APP])
        scene.origin = EVIL
        return False
    if rule == ORIGIN_ALLOWED:
        _configure(scene.project, allowed_origins=[APP])
        scene.origin = APP
        return True
    if rule == NO_ORIGIN:
        _configure(scene.project, allowed_origins=[APP])
        return True
    if rule == TOKEN_REQUIRED:
        configure_hs256(scene.project)
        _configure(scene.project, token_required=True)
        return False
    if rule == REVOKED_KEY:
        ApiKey.objects.update(revoked=True)
        return False
    if rule == RATE_LIMIT:
        # The scene's own run was counted before the limit existed; the window starts with this call.
        _configure(scene.project, limits=Limits(runs_per_minute=1))
        return False  # checked (the first call served) by the rule itself
    if rule == TOKEN_BUDGET:
        _configure(scene.project, limits=Limits(tokens_per_day=10))
        limits.call_record(project=scene.project, user_key=None, usage={"total_tokens": 10})
        return False
    if rule == ALLOWED_MODEL:
        _configure(scene.project, allowed_models=["offline"])
        return False
    if rule == CONTEXT_BUDGET:
        _configure(scene.project, max_input_tokens=200)
        return False
    return True
