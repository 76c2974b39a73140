"""The end of one metered model call (telemetry/calls.py), once: its tokens counted in the metrics,
the fallbacks it took counted, then in ONE worker hop its admission's reservation reconciled with what
it used (projects/limits.py `call_record`) and its usage row written. Shielded: a client that leaves
while this runs must not leave the call unrecorded or its reservation held. A failure is logged,
never raised into the caller's answer."""
from __future__ import annotations

import asyncio
import logging

from core.db import db_call
from projects import limits
from projects.models_config import project_model_names
from telemetry import metrics
from telemetry.usage import tokens_of, usage_record_call

log = logging.getLogger(__name__)


async def call_settle(admission, *, models, model: str, provider: str, usage: dict | None, duration: float,
                      outcome: str, code: str | None) -> None:
    """`admission`: telemetry/calls.py's Admission (its scope and reservation); `models`: the
    ModelChain whose fallbacks are counted (None for a provider or a transcription)."""
    scope = admission.scope
    project = scope.project
    offered = project_model_names(project)
    label = metrics.model_label(model, offered)
    for type_, count in tokens_of(usage).items():
        if count:
            metrics.TOKENS.labels(project.name, label, type_).inc(count)
    metrics.fallbacks_taken(project.name, getattr(models, "fallbacks", None), offered)
    try:
        await asyncio.shield(db_call(_settle, admission=admission, model=model, provider=provider, usage=usage,
                                     duration=duration, outcome=outcome, code=code))
    except Exception:  # noqa: BLE001 - usage is bookkeeping; the answer was given
        log.warning("Could not record the usage of a %s call", scope.kind, exc_info=True)


def _settle(*, admission, model: str, provider: str, usage: dict | None, duration: float, outcome: str,
            code: str | None) -> None:
    scope = admission.scope
    try:
        # What it used, less what its admission reserved: a refused or unused call gives it all back.
        limits.call_record(project=scope.project, user_key=scope.user_key, usage=usage, reserved=admission.reserved)
    except Exception:  # noqa: BLE001 - the usage row is still written
        log.warning("Could not count the tokens of a %s call against the budgets", scope.kind, exc_info=True)
    usage_record_call(project_id=scope.project.id, user_key=scope.row_user, kind=scope.kind, model=model,
                      provider=provider, usage=usage, duration_s=duration, outcome=outcome, error_code=code,
                      thread_id=scope.thread_id)
