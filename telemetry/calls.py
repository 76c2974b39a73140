"""The meter of one short model call (a chat completion through the gateway; thread names and
suggestions once they call it): wraps the provider's deltas, and when they end records the call's
usage row and token samples. One INSERT per call, after the model answered; nothing per delta but
one test."""
from __future__ import annotations

import asyncio
import logging
import time
from typing import AsyncIterator

from core.db import db_call
from providers.base import Delta, ModelError, StepEnd
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


async def _record(*, project, user_key: str, kind: str, model: str, provider: str, usage, duration: float,
                  outcome: str, code: str | None) -> None:
    label = metrics.model_label(model)
    for type_, count in tokens_of(usage).items():
        if count:
            metrics.TOKENS.labels(project.name, label, type_).inc(count)
    try:
        # Shielded: a client that leaves while the row is written must not leave the call unrecorded.
        await asyncio.shield(db_call(usage_record_call, project_id=project.id, user_key=user_key, kind=kind,
                                     model=model, provider=provider, usage=usage, duration_s=duration,
                                     outcome=outcome, error_code=code))
    except Exception:  # noqa: BLE001 - usage is bookkeeping; the answer was given
        log.warning("Could not record the usage of a %s call", kind, exc_info=True)
