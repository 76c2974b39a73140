"""The meter of one short model call: a chat completion through the gateway (`metered`, around the
provider's deltas), a thread name, suggestions or a memory extraction (`complete_metered`, around the
provider's one answer; `model_complete`, the one door of those side calls, admits it against the
project's limits first). When the call ends its usage row is recorded and its tokens counted: one
INSERT per call, after the model answered; nothing per delta but one test."""
from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import dataclass, replace
from typing import AsyncIterator

from core.db import db_call
from core.problems import Problem
from django.conf import settings

from projects.models_config import model_chain_for, project_model_names
from providers import get_provider
from providers.base import Completion, Delta, ModelError, ModelRequest, Provider, StepEnd
from projects import limits
from providers.chain import ModelChain
from providers.usage_estimate import CallTally
from telemetry import metrics
from telemetry.models import Usage
from telemetry.usage import tokens_of, usage_record_call

log = logging.getLogger(__name__)


async def metered(deltas: AsyncIterator[Delta], *, project, user_key: str, kind: str, model: str,
                  provider: str, chain=None, sent: list[dict] | None = None, charge: bool = False) -> AsyncIterator[Delta]:
    """`deltas` unchanged; once they end (or fail, or are closed early) the call's usage is recorded.
    With the ModelChain `chain` that streams them, the model that answered is recorded and the
    fallbacks it took are counted. With the messages `sent`, a call whose vendor reported no usage (a
    stream the client left, one the vendor cut, a vendor that ignores `include_usage`) is recorded
    with its estimate (providers/usage_estimate.py); one refused before any delta is charged nothing.
    `charge` also adds the tokens to the project's day budgets (projects/limits.py; the gateway names
    no end user). A failure to record is logged, never raised into the caller's answer."""
    started, outcome, code = time.monotonic(), Usage.Outcome.CANCELLED, None
    tally = CallTally(sent or [])
    refused = False
    try:
        async for delta in deltas:
            tally.see(delta)
            if isinstance(delta, StepEnd):
                outcome = Usage.Outcome.COMPLETED
            yield delta
    except ModelError as exc:
        outcome, code = Usage.Outcome.FAILED, exc.code
        refused = tally.deltas == 0 and not exc.accepted  # ModelError.accepted: the vendor read the prompt
        raise
    finally:
        await deltas.aclose()
        answered = getattr(chain, "answered", None)
        if answered is not None:
            model, provider = answered.model, answered.provider
        metrics.fallbacks_taken(project.name, getattr(chain, "fallbacks", None), project_model_names(project))
        usage = tally.reported if sent is None or refused else tally.usage()
        if charge and usage:
            await _charge(project, usage)
        await _record(project=project, user_key=user_key, kind=kind, model=model, provider=provider, usage=usage,
                      duration=time.monotonic() - started, outcome=outcome, code=code)


async def _charge(project, usage: dict) -> None:
    try:
        # Shielded as the usage row is: a client that leaves must not leave the call uncharged.
        await asyncio.shield(db_call(limits.call_record, project=project, user_key=None, usage=usage))
    except Exception:  # noqa: BLE001 - as the usage row: the answer was given
        log.warning("Could not count the tokens of a call against the budgets", exc_info=True)


@dataclass(frozen=True)
class CallScope:
    """Who a short, non-streamed call is for: what its usage row is recorded under."""

    project: object
    user_key: str
    kind: str  # Usage.Kind: "name", "suggestions", "memory"
    thread_id: str | None = None


async def complete_metered(models: Provider | ModelChain, request: ModelRequest, *, scope: CallScope) -> Completion:
    """`await models.complete(request)`, with the call's usage recorded once it answered or failed
    (one INSERT) and its tokens counted. For a ModelChain the model recorded is the one that answered
    (its first when none did) and its fallbacks are counted."""
    started, usage, outcome, code = time.monotonic(), None, Usage.Outcome.CANCELLED, None
    try:
        completion = await models.complete(request)
        if not completion.usage:
            # A vendor that reports no usage is charged the estimate (providers/usage_estimate.py).
            tally = CallTally(request.messages)
            tally.see_text(completion.text, None)
            completion = replace(completion, usage=tally.usage())
        usage, outcome = completion.usage, Usage.Outcome.COMPLETED
        return completion
    except ModelError as exc:
        outcome, code = Usage.Outcome.FAILED, exc.code
        if exc.accepted:
            # Held past its deadline (providers/deadline.py): the prompt the vendor read is charged.
            usage = CallTally(request.messages).usage()
        raise
    finally:
        model, provider = _answering(models, request)
        metrics.fallbacks_taken(scope.project.name, getattr(models, "fallbacks", None),
                                project_model_names(scope.project))
        await _record(project=scope.project, user_key=scope.user_key, kind=scope.kind, model=model,
                      provider=provider, usage=usage, duration=time.monotonic() - started, outcome=outcome,
                      code=code, thread_id=scope.thread_id)


def _answering(models: Provider | ModelChain, request: ModelRequest) -> tuple[str, str]:
    """(model, provider) of the call, as a run's usage row names them."""
    if isinstance(models, ModelChain):
        target = models.answered or models.targets[0]
        return target.model, target.provider
    from telemetry.runs import resolved_model

    return resolved_model(request.model), getattr(models, "name", None) or settings.MODEL_PROVIDER


async def _record(*, project, user_key: str, kind: str, model: str, provider: str, usage, duration: float,
                  outcome: str, code: str | None, thread_id: str | None = None) -> None:
    label = metrics.model_label(model, project_model_names(project))
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
    Each call leaves one usage row of `kind` ("name", "suggestions", "memory"), answered or failed.
    The side tasks (assist/, memory/) all call the model through here.
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
        if exc.accepted:  # the prompt the vendor read counts against the budgets, as the usage row has it
            await db_call(limits.call_record, project=project, user_key=user_key,
                          usage=CallTally(request.messages).usage())
        raise model_problem(exc) from exc
    await db_call(limits.call_record, project=project, user_key=user_key, usage=completion.usage)
    return completion
