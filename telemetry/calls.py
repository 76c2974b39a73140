"""The meter of one short model call: a chat completion through the gateway (`metered`, around the
provider's deltas), a thread name or suggestions (`complete_metered`, around the provider's one
answer). When the call ends its usage row is recorded and its tokens counted: one INSERT per call,
after the model answered; nothing per delta but one test."""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass
from typing import AsyncIterator, Awaitable, Callable

from core.db import db_call
from django.conf import settings

from providers.base import Completion, Delta, ModelError, ModelRequest, StepEnd
from telemetry import metrics
from telemetry.models import Usage
from telemetry.usage import tokens_of, usage_record_call

log = logging.getLogger(__name__)


async def metered(deltas: AsyncIterator[Delta], *, project, user_key: str, kind: str, model: str,
                  provider: str) -> AsyncIterator[Delta]:
    """`deltas` unchanged; once they end (or fail, or are closed early) the call's usage is recorded.
    A failure to record is logged, never raised into the caller's answer."""
    started, usage, outcome, code = time.monotonic(), None, Usage.Outcome.CANCELLED, None
    try:
        async for delta in deltas:
            if isinstance(delta, StepEnd):
                usage, outcome = delta.usage, Usage.Outcome.COMPLETED
            yield delta
    except ModelError as exc:
        outcome, code = Usage.Outcome.FAILED, exc.code
        raise
    finally:
        await deltas.aclose()
        await _record(project=project, user_key=user_key, kind=kind, model=model, provider=provider, usage=usage,
                      duration=time.monotonic() - started, outcome=outcome, code=code)


@dataclass(frozen=True)
class CallScope:
    """Who a short, non-streamed call is for: what its usage row is recorded under."""

    project: object
    user_key: str
    kind: str  # Usage.Kind: "name", "suggestions"
    thread_id: str | None = None


async def complete_metered(complete: Callable[[ModelRequest], Awaitable[Completion]], request: ModelRequest, *,
                           scope: CallScope) -> Completion:
    """`await complete(request)`, with the call's usage recorded once it answered or failed."""
    from telemetry.runs import resolved_model

    started, usage, outcome, code = time.monotonic(), None, Usage.Outcome.CANCELLED, None
    try:
        completion = await complete(request)
        usage, outcome = completion.usage, Usage.Outcome.COMPLETED
        return completion
    except ModelError as exc:
        outcome, code = Usage.Outcome.FAILED, exc.code
        raise
    finally:
        await _record(project=scope.project, user_key=scope.user_key, kind=scope.kind, model=resolved_model(request.model),
                      provider=settings.MODEL_PROVIDER, usage=usage, duration=time.monotonic() - started,
                      outcome=outcome, code=code, thread_id=scope.thread_id)


async def _record(*, project, user_key: str, kind: str, model: str, provider: str, usage, duration: float,
                  outcome: str, code: str | None, thread_id: str | None = None) -> None:
    label = metrics.model_label(model)
    for type_, count in tokens_of(usage).items():
        if count:
            metrics.TOKENS.labels(project.name, label, type_).inc(count)
    try:
        # Shielded: a client that leaves while the row is written must not leave the call unrecorded.
        await asyncio.shield(db_call(usage_record_call, project_id=project.id, user_key=user_key, kind=kind,
                                     model=model, provider=provider, usage=usage, duration_s=duration,
                                     outcome=outcome, error_code=code, thread_id=thread_id))
    except Exception:  # noqa: BLE001 - usage is bookkeeping; the answer was given
        log.warning("Could not record the usage of a %s call", kind, exc_info=True)
