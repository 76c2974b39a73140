"""One non-streamed model call for a side task, with the provider's errors answered as problems."""
from __future__ import annotations

from typing import Iterable

from core.db import db_call
from core.problems import Problem
from projects import limits
from projects.models_config import model_chain_for
from providers import get_provider
from providers.base import Completion, ModelError, ModelRequest
from telemetry.calls import CallScope, complete_metered
from threads.content import block_text
from threads.models import Message


def model_problem(exc: ModelError) -> Problem:
    """The problem for a model failure: the run codes (docs/protocol.md#the-event-stream) with the provider's safe message.

    A rate-limited provider is 429 with its Retry-After (when it gave one); any other failure is the
    provider's, not the caller's, so it is 502 Bad Gateway.
    """
    extra: dict = {"category": exc.category, "isRetryable": exc.retryable}
    if exc.code == "LLM_RATE_LIMITED":
        if exc.retry_after_header is not None:
            extra["retryAfter"] = exc.retry_after_header
        return Problem(429, exc.code, exc.message, **extra)
    return Problem(502, exc.code, exc.message, **extra)


async def model_complete(request: ModelRequest, *, project, user_key: str | None, kind: str,
                         thread_id: str | None = None, admit: bool = True) -> Completion:
    """The answer of the project's models (its first, then its fallbacks; the server's default without
    a project); raises Problem (429/502) when the model fails.

    Counted against the project's limits (projects/limits.py): admitted first (429 RATE_LIMITED /
    BUDGET_EXCEEDED) unless `admit` is False (a retry within the same request), its tokens recorded after.
    Each call leaves one usage row of `kind` ("name", "suggestions"; telemetry/calls.py), answered or failed.
    """
    if admit:
        await db_call(limits.call_admit, project=project, user_key=user_key)
    try:
        if project is not None:
            completion = await complete_metered(model_chain_for(project, requested=None), request,
                                                scope=CallScope(project, user_key or "", kind, thread_id))
        else:
            completion = await get_provider().complete(request)
    except ModelError as exc:
        raise model_problem(exc) from exc
    await db_call(limits.call_record, project=project, user_key=user_key, usage=completion.usage)
    return completion


def message_text(message: Message) -> str:
    return "\n".join(block_text(b) for b in message.content if b.get("type") in ("text", "resource")).strip()


def transcript(messages: Iterable[Message], *, max_chars: int, keep_end: bool) -> str:
    """The conversation as plain `User:` / `Assistant:` lines for a prompt, at most `max_chars` long
    (its end when `keep_end`, else its start).

    Tool traffic is left out (it means little to a title or a suggestion); a rendered component is
    named, since it is what the user saw.
    """
    lines = []
    for message in messages:
        if message.role not in (Message.Role.USER, Message.Role.ASSISTANT):
            continue
        text = message_text(message)
        shown = [b.get("name") for b in message.content if b.get("type") == "component"]
        if shown:
            text = (text + "\n" if text else "") + "".join(f"[showed the {name} component]" for name in shown)
        if text:
            lines.append(f"{message.role.capitalize()}: {text}")
    joined = "\n".join(lines)
    if len(joined) <= max_chars:
        return joined
    return joined[-max_chars:] if keep_end else joined[:max_chars]
