"""Views raise `Problem`; one place answers it (core/error_shapes.py `exception_answer`), called by the
exception middleware for plain and async views and by DRF's exception handler (issue 32).

The scan reads every view module the URL configuration reaches and fails on a catch that only turns a
Problem into an answer, so a new one cannot land; the live cases show a Problem raised in an async view,
a streaming view before its stream, a synchronous DRF view and a gateway view still answered in the
route's shape, over real HTTP to the uvicorn server (Django calls the middleware's `process_exception`
for an async view too)."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest
import requests
from django.conf import settings
from django.test import RequestFactory
from django.urls import URLPattern, URLResolver, get_resolver
from django.utils.module_loading import import_string

from core.error_shapes import exception_answer
from core.problems import Problem
from projects.config import ProjectSettings, project_settings_save
from tests.support.problems import assert_problem

ROOT = Path(settings.BASE_DIR).resolve()


# --- The scan ---------------------------------------------------------------------------------------

def _callbacks(resolver: URLResolver):
    for entry in resolver.url_patterns:
        if isinstance(entry, URLResolver):
            yield from _callbacks(entry)
        elif isinstance(entry, URLPattern):
            yield entry.callback


def view_modules() -> dict[str, Path]:
    """The project's modules that hold a view of the URL configuration (Django's and packages' left out)."""
    modules = {}
    for callback in _callbacks(get_resolver()):
        target = getattr(callback, "view_class", None) or getattr(callback, "cls", None) or callback
        module = inspect.getmodule(target)
        path = Path(getattr(module, "__file__", "") or "/").resolve()
        if path.is_relative_to(ROOT) and ".venv" not in path.parts and "site-packages" not in path.parts:
            modules[module.__name__] = path
    return modules


def _names_problem(node: ast.expr | None) -> bool:
    if isinstance(node, ast.Tuple):
        return any(_names_problem(element) for element in node.elts)
    return (isinstance(node, ast.Name) and node.id == "Problem") or (
        isinstance(node, ast.Attribute) and node.attr == "Problem")


_STRAIGHT = (ast.Assign, ast.AnnAssign, ast.AugAssign, ast.Expr, ast.Return)


def answers_itself(handler: ast.ExceptHandler) -> bool:
    """A catch of Problem whose body only builds and returns an answer: straight-line code ending in a
    `return` (no condition, no raise, no retry). A catch that maps the problem to another exception, or
    decides something (a redirect for a 401, a second try) is real work and passes."""
    body = handler.body
    return (_names_problem(handler.type) and all(isinstance(statement, _STRAIGHT) for statement in body)
            and isinstance(body[-1], ast.Return) and body[-1].value is not None)


def _answers_a_new_problem(node: ast.AST) -> bool:
    """`return response_for(Problem(...), ...)`: a problem answered where it could be raised."""
    return (isinstance(node, ast.Return) and isinstance(node.value, ast.Call)
            and isinstance(node.value.func, ast.Name) and node.value.func.id in ("response_for", "error_answer")
            and bool(node.value.args) and isinstance(node.value.args[0], ast.Call)
            and _names_problem(node.value.args[0].func))


def error_handlers() -> set[tuple[str, str]]:
    """(module, function) of the views Django calls for what it refuses itself (handler400, handler404,
    CSRF_FAILURE_VIEW…): they run after the middleware, so they answer rather than raise."""
    resolver = get_resolver()
    views = [resolver.resolve_error_handler(status) for status in (400, 403, 404, 500)]
    views.append(import_string(settings.CSRF_FAILURE_VIEW))
    return {(view.__module__, view.__name__) for view in views}


def findings(source: str, name: str = "<source>") -> list[str]:
    found = []
    handlers = {function for module, function in error_handlers() if module == name}
    tree = ast.parse(source)
    for function in ast.walk(tree):
        if isinstance(function, (ast.FunctionDef, ast.AsyncFunctionDef)) and function.name in handlers:
            function.body = []  # Django's error handlers are not scanned
    for node in ast.walk(tree):
        if isinstance(node, ast.ExceptHandler) and answers_itself(node):
            found.append(f"{name}:{node.lineno}: a view catches Problem only to answer it; let it rise to "
                         "ProblemMiddleware (core/error_shapes.py exception_answer)")
        elif _answers_a_new_problem(node):
            found.append(f"{name}:{node.lineno}: raise the Problem instead of answering it here")
    return found


def test_the_scan_reads_every_view_module_the_urls_reach():
    assert {"runs.views", "runs.agui.views", "runs.stream.views", "threads.views", "threads.mcp_views",
            "gateway.views", "assist.views", "tools.views", "retention.views", "projects.oauth",
            "tambo_project.audio_views"} <= set(view_modules())


def test_no_view_catches_a_problem_only_to_answer_it():
    found = [finding for name, path in sorted(view_modules().items())
             for finding in findings(path.read_text(), name)]

    assert not found, "\n".join(found)


@pytest.mark.parametrize("catch", [
    "except Problem as problem:\n        return response_for(problem, request.path)",
    "except (Problem, ValueError) as problem:\n        return _problem(problem, request)",
    "except problems.Problem as problem:\n        answer = error_answer(problem, request.path)\n"
    "        answer['x-should-retry'] = 'false'\n        return answer",
])
def test_the_scan_finds_a_catch_that_only_answers(catch):
    source = f"async def view(request):\n    try:\n        await work()\n    {catch}\n"
    assert len(findings(source)) == 1


def test_the_scan_finds_a_problem_answered_where_it_could_be_raised():
    source = "def view(request):\n    return response_for(Problem(405, 'METHOD_NOT_ALLOWED', 'No.'), request.path)\n"
    assert len(findings(source)) == 1


@pytest.mark.parametrize("catch", [
    # The gateway's: a 401 in OpenAI's words, anything else left to rise.
    """except Problem as problem:
        if problem.status == 401:
            raise GatewayError(401, "A valid key is required.") from None
        raise""",
    # A translation into another exception (the gateway's rate limit, OAuth's client error).
    """except Problem as problem:
        raise ClientRefused() from problem""",
    # An admin page that redirects to the login (a page, not the API).
    """except Problem as problem:
        if problem.status == 401:
            return HttpResponseRedirect("/admin/login/")
        return _page(problem.status, "Not started", problem.detail)""",
])
def test_the_scan_passes_a_catch_that_does_real_work(catch):
    source = f"async def view(request):\n    try:\n        await work()\n    {catch}\n"
    assert findings(source) == []


# --- The one answer ---------------------------------------------------------------------------------

def test_a_non_retryable_problem_says_so_in_every_shape():
    problem = Problem(502, "LLM_CLIENT_ERROR", "The model refused the request.", isRetryable=False)
    for path in ("/v1/threads/thr_x/generate-name", "/api/chat/completions"):
        answer = exception_answer(problem, RequestFactory().post(path))
        assert answer.status_code == 502 and answer["x-should-retry"] == "false", path
    retryable = Problem(502, "LLM_UNAVAILABLE", "The model is unavailable.", isRetryable=True)
    assert not exception_answer(retryable, RequestFactory().post("/v1/x")).has_header("x-should-retry")


def test_off_the_api_only_a_problem_is_answered():
    request = RequestFactory().get("/admin/threads/message/1/")
    assert exception_answer(LookupError("a bug"), request) is None  # Django's own page
    assert exception_answer(Problem(404, "NOT_FOUND", "No."), request).status_code == 404


# --- Live, over HTTP --------------------------------------------------------------------------------

@pytest.mark.django_db(transaction=True)
def test_a_problem_raised_in_an_async_view_is_answered_in_the_routes_shape(api):
    path = "/v1/threads/thr_missing/runs/run_missing"
    body = assert_problem(api.get(path, userKey="alice"), 404, "RUN_NOT_FOUND")
    assert body["instance"] == path

    refused = requests.post(api.base_url + "/v1/threads/runs", headers={"x-api-key": "tambo_wrong"}, timeout=30,
                            json={"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}})
    assert_problem(refused, 401, "UNAUTHORIZED", instance="/v1/threads/runs")


@pytest.mark.django_db(transaction=True)
def test_a_problem_raised_before_a_stream_begins_is_answered(api):
    path = "/v1/threads/thr_x/runs/run_x/events"
    response = api.session.get(api.base_url + path, params={"userKey": "alice"}, timeout=30,
                               headers={"Last-Event-ID": "not a number"})
    assert_problem(response, 400, "VALIDATION_ERROR", field="Last-Event-ID", instance=path)
    assert_problem(api.get("/v1/threads/thr_missing/events", userKey="alice"), 404, "THREAD_NOT_FOUND")


@pytest.mark.django_db(transaction=True)
def test_a_problem_raised_in_a_drf_view_is_answered_in_the_routes_shape(api):
    path = "/v1/threads/thr_missing"
    assert_problem(api.get(path, userKey="alice"), 404, "THREAD_NOT_FOUND", instance=path)
    # DRF's own exceptions go through the same answer.
    assert_problem(api.session.put(api.base_url + "/v1/threads", json={}, timeout=30), 405, "METHOD_NOT_ALLOWED")


@pytest.mark.django_db(transaction=True)
def test_a_problem_raised_in_a_gateway_view_is_answered_in_openais_shape(live_server_url, api_key, project):
    project_settings_save(project, ProjectSettings(allowed_origins=["https://app.example"]))

    response = requests.post(live_server_url + "/api/chat/completions", timeout=30,
                             headers={"x-api-key": api_key, "Origin": "https://evil.example"},
                             json={"model": "offline", "messages": [{"role": "user", "content": "hi"}]})

    assert response.status_code == 403 and response.headers["Content-Type"] == "application/json", response.text
    error = response.json()["error"]
    assert error["code"] == "origin_not_allowed" and error["type"] == "invalid_request_error" and error["message"]
