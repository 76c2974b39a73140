"""`POST /api/chat/completions`: the OpenAI-compatible gateway (docs/clients.md#chat-completions-gateway).

The view authenticates (project API key as `x-api-key` or `Authorization: Bearer`, or a browser
session with CSRF), counts the request against the key's rate limit, checks and translates the
body, routes it through the model allow-list and streams the provider's deltas back as chunks.
The first delta is awaited before any byte is sent, so a vendor that fails at once gives the
caller a plain HTTP error; a failure after that ends the stream with one error event. No thread is
kept: the caller sends the whole conversation each time.
"""
from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any, AsyncIterator

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt

from core.db import db_call
from core.input_guard import request_json
from core.problems import Problem
from core.sanity import InputError
from core.sse import sse_response
from gateway.chunks import DONE, ChunkEncoder, CompletionBuilder, sse_line
from gateway.errors import (INVALID_REQUEST, RATE_LIMIT, SERVER_ERROR, GatewayError, from_model_error, invalid,
                            openai_error_body, openai_error_response, stream_error_body)
from gateway.models import Route, model_get, model_list, model_resolve
from gateway.responses import ResponseFold, chat_body, event_line
from gateway.translate import ChatRequest, parse_chat_request
from providers.parameters import parameter_refusal
from projects import limits
from projects.auth import Principal, principal_aresolve
from projects.config import output_cap, project_settings
from projects.models_config import model_chain_for
from providers import get_provider
from providers.base import Delta, ModelError, StepEnd
from providers.chain import max_tokens_capped
from providers.estimate import prompt_tokens
from telemetry import metrics
from telemetry.calls import Admission, CallScope, call_admit, call_reservation, model_stream

log = logging.getLogger(__name__)

MSG_INTERNAL = "The server failed while answering."
MSG_NO_ANSWER = "The model provider ended its answer without any content."


@csrf_exempt  # key callers have no CSRF token; session callers are checked in principal_aresolve
async def chat_completions(request: HttpRequest) -> HttpResponse:
    if request.method != "POST":
        return _method_not_allowed("POST")
    try:
        principal = await _caller(request)
        chat = parse_chat_request(_body(request))
        route, deltas = await _model_call(principal, chat)
        if not chat.stream:
            return JsonResponse(await _whole(deltas, route.alias))
        first = await _first(deltas)
    except GatewayError as error:
        return error.response()
    # Anything else (a database outage, a bug) is ProblemMiddleware's, answered in this route's
    # OpenAI shape (core/error_shapes.py, gateway/apps.py).
    encoder = ChunkEncoder(model=route.alias, include_usage=chat.include_usage)
    return sse_response(_stream(encoder, first, deltas))


@csrf_exempt  # key callers have no CSRF token; session callers are checked in principal_aresolve
async def responses(request: HttpRequest) -> HttpResponse:
    """`POST /api/responses`: OpenAI's Responses API over the same checks and metered model call as the
    chat completions (gateway/responses.py translates both ways)."""
    if request.method != "POST":
        return _method_not_allowed("POST")
    try:
        principal = await _caller(request)
        body = _body(request)
        chat = parse_chat_request(chat_body(body))
        route, deltas = await _model_call(principal, chat)
        fold = ResponseFold(model=route.alias, request=body)
        if not chat.stream:
            await _fold_whole(deltas, fold)
            return JsonResponse(fold.response())
        first = await _first(deltas)
    except GatewayError as error:
        return error.response()
    return sse_response(_response_events(fold, first, deltas))


async def _caller(request: HttpRequest) -> Principal:
    """Who is calling, counted against the key's request rate (429 past it)."""
    principal = await _principal(request)
    wait = await db_call(limits.requests_admit, project=principal.project, bucket=principal.rate_limit_key,
                         limit=settings.GATEWAY_RATE_LIMIT_PER_MINUTE)
    if wait is not None:
        metrics.rate_limited(principal.project, "gateway_requests_per_minute")
        raise GatewayError(429, "Too many requests for this API key; try again later.", type_=RATE_LIMIT,
                           code="rate_limit_exceeded", retry_after=wait)
    return principal


async def _model_call(principal: Principal, chat: ChatRequest) -> tuple[Route, AsyncIterator[Delta]]:
    """The one metered model call of both gateway routes, through the door (telemetry/calls.py): the
    model's route and the parameters its provider must honour (400s, before anything is counted), the
    project's rates and budgets with the call's worst case reserved (429), then the deltas. Nothing is
    called yet; the call's end records its usage and reconciles the reservation, however it ends: the
    vendor's usage, or the estimate of what was sent and received (a client that leaves, a vendor
    that reports none)."""
    route = model_resolve(requested=chat.model, project=principal.project)
    if route.project_model:
        # The project's own models: the same fallbacks, keys and caps as its runs.
        models = model_chain_for(principal.project, requested=route.alias)
        parameters_check([target.provider for target in models.targets], chat.parameters)
        request = chat.model_request(None)
    else:
        parameters_check([route.provider], chat.parameters)
        # The project's output cap (its maxOutputTokens, else the server's default), as its chain's.
        request = chat.model_request(route.model)
        request = replace(request, max_tokens=max_tokens_capped(request.max_tokens,
                                                                output_cap(project_settings(principal.project))))
        models = get_provider(route.provider)
    # The gateway names no end user: the project's limits count it; its row names the session's or token's user.
    scope = CallScope(principal.project, "gateway", user_key=None,
                      recorded_user=principal.session_user_key or principal.token_user_key or "",
                      model=route.model or route.alias, provider=route.provider)
    admission = await _admit(scope, call_reservation(principal.project, input_tokens=prompt_tokens(request.messages),
                                                     max_tokens=request.max_tokens))
    return route, model_stream(models, request, scope, admission=admission)


async def _fold_whole(deltas: AsyncIterator[Delta], fold: CompletionBuilder | ResponseFold) -> None:
    """A whole (not streamed) answer fed to `fold`, either route's folder; 502 when it has no end."""
    try:
        async for delta in deltas:
            fold.feed(delta)
    except ModelError as error:
        log.warning("gateway: the model failed: %s (status %s)", error.code, error.status)
        raise from_model_error(error) from None
    finally:
        await deltas.aclose()
    if fold.end is None:
        raise GatewayError(502, MSG_NO_ANSWER, type_=SERVER_ERROR, code="upstream_error")


async def _response_events(fold: ResponseFold, first: Delta, deltas: AsyncIterator[Delta]) -> AsyncIterator[bytes]:
    """The Responses SSE body; a model failure mid-stream ends it with `error` and `response.failed`."""
    try:
        yield b"".join(event_line(event) for event in [*fold.opening(), *fold.feed(first)])
        async for delta in deltas:
            events = fold.feed(delta)
            if events:
                yield b"".join(event_line(event) for event in events)
        if fold.end is None:
            raise ModelError("LLM_SERVER_ERROR", MSG_NO_ANSWER, retryable=True)
    except ModelError as error:
        log.warning("gateway: the model failed mid-stream: %s (status %s)", error.code, error.status)
        body = stream_error_body(error)["error"]
        yield b"".join(event_line(event) for event in fold.failed(body.get("code") or "server_error", body["message"]))
    except Exception:
        log.exception("gateway: the stream failed")
        yield b"".join(event_line(event) for event in fold.failed("internal_error", MSG_INTERNAL))
    finally:
        await deltas.aclose()


@csrf_exempt  # a read: any other method must learn it is 405, not a CSRF failure
async def models(request: HttpRequest, model_id: str | None = None) -> HttpResponse:
    """`GET /api/models` and `GET /api/models/{id}`: the allow-list in OpenAI's shape, so
    `client.models.list()` works. Same authentication as the completions."""
    if request.method != "GET":
        return _method_not_allowed("GET")
    try:
        project = (await _principal(request)).project
        return JsonResponse(model_get(alias=model_id, project=project) if model_id is not None
                            else model_list(project))
    except GatewayError as error:
        return error.response()


@csrf_exempt  # a POST to a mistyped path must learn it is 404, not a CSRF failure
async def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    """Any other path under /api/: OpenAI's 404 shape, so a mistyped base URL is obvious."""
    return openai_error_response(404, f"Unknown path {request.path[:200]!r}; the gateway serves "
                                      "POST /api/chat/completions and POST /api/responses.", "invalid_request_error",
                                 "unknown_url")


async def _principal(request: HttpRequest) -> Principal:
    try:
        return await principal_aresolve(request)
    except Problem as problem:
        if problem.status == 401:
            raise GatewayError(401, "A valid project API key is required (Authorization: Bearer <key> or "
                                    "x-api-key).", code="invalid_api_key") from None
        # Any other (a 503 while the database is down, with when to try again) is answered by
        # ProblemMiddleware in this route's OpenAI shape (core/error_shapes.py).
        raise


def parameters_check(providers: list[str], parameters: dict[str, Any]) -> None:
    """A 400 naming the first parameter that a provider which may answer (the model's, or any of its
    fallbacks') cannot honour: refused rather than dropped, so the caller knows why the answer would differ."""
    for provider in dict.fromkeys(providers):
        refusal = parameter_refusal(provider, parameters)
        if refusal is not None:
            name, sentence = refusal
            raise invalid(sentence, param=name, code="unsupported_parameter")


async def _admit(scope: CallScope, reserve: int) -> Admission:
    """The project's run rate and token budgets (projects/limits.py), in OpenAI's error shape."""
    try:
        return await call_admit(scope, reserve=reserve)
    except Problem as problem:
        raise GatewayError(problem.status, problem.detail, type_=RATE_LIMIT, code=problem.code.lower(),
                           retry_after=problem.extra.get("retryAfter")) from None


def _body(request: HttpRequest) -> Any:
    """The body through the server's one checked JSON parser (core.sanity)."""
    try:
        return request_json(request)
    except InputError as error:
        param = None if error.field == "body" else error.field
        raise GatewayError(400, error.detail, code="invalid_value", param=param) from None


async def _first(deltas: AsyncIterator[Delta]) -> Delta:
    """The first delta, before any byte is sent; closes the stream and raises GatewayError on failure."""
    try:
        return await anext(deltas)
    except StopAsyncIteration:
        raise GatewayError(502, MSG_NO_ANSWER, type_=SERVER_ERROR, code="upstream_error") from None
    except ModelError as error:
        log.warning("gateway: the model failed before answering: %s (status %s)", error.code, error.status)
        raise from_model_error(error) from None
    except BaseException:
        await deltas.aclose()
        raise


async def _whole(deltas: AsyncIterator[Delta], alias: str) -> dict:
    builder = CompletionBuilder(model=alias)
    await _fold_whole(deltas, builder)
    return builder.body()


async def _stream(encoder: ChunkEncoder, first: Delta, deltas: AsyncIterator[Delta]) -> AsyncIterator[bytes]:
    """The SSE body. A client that goes away cancels this generator, which closes the vendor stream."""
    ended = False
    try:
        for chunk in encoder.feed(first):
            yield sse_line(chunk)
        ended = _is_end(first)
        async for delta in deltas:
            out = encoder.feed(delta)
            if out:
                yield b"".join(sse_line(chunk) for chunk in out)
            ended = ended or _is_end(delta)
        if not ended:
            raise ModelError("LLM_SERVER_ERROR", MSG_NO_ANSWER, retryable=True)
    except ModelError as error:
        log.warning("gateway: the model failed mid-stream: %s (status %s)", error.code, error.status)
        yield sse_line(stream_error_body(error))
    except Exception:
        log.exception("gateway: the stream failed")
        yield sse_line(openai_error_body(MSG_INTERNAL, SERVER_ERROR, "internal_error"))
    finally:
        await deltas.aclose()
    yield DONE


def _is_end(delta: Delta) -> bool:
    return isinstance(delta, StepEnd)


def _method_not_allowed(allowed: str) -> HttpResponse:
    # In OpenAI's error shape, which the gateway's callers read (Django's own 405 is an empty page).
    response = openai_error_response(405, f"Only {allowed} is allowed here.", "invalid_request_error",
                                     "method_not_allowed")
    response["Allow"] = allowed
    return response
