"""The run path's hooks: a meter started with the run, marked as the model answers, and ended once
with the run's final write.

Per token the loop does one attribute test (`first_output_at is None`); per tool call one dict
increment; everything else (the usage row, the Prometheus samples, the end log line, the end of the
`invoke_agent` span) happens once, when the run ends. The usage row is written inside the
transaction that releases the run's lock (runs/lock.py `lock_release`), so it commits or not with
the run's end and needs no transaction of its own.
"""
from __future__ import annotations

import logging
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings

from core.statements import Insert
from projects.models_config import project_model_names
from telemetry import metrics, tracing
from telemetry.models import Usage
from telemetry.usage import tokens_of

_USAGE_INSERT = Insert(Usage)  # on every run's end: written once, not built by the ORM per run

log = logging.getLogger("tambo.run")

_OUTCOMES = {"completed": Usage.Outcome.COMPLETED, "awaiting_input": Usage.Outcome.AWAITING_INPUT,
             "cancelled": Usage.Outcome.CANCELLED, "failed": Usage.Outcome.FAILED}


def resolved_model(model: str | None) -> str:
    """The model a run used: the one it asked for, else the provider's default."""
    if model:
        return model
    return settings.OPENAI_MODEL if settings.MODEL_PROVIDER == "openai" else settings.MODEL_PROVIDER


@dataclass
class RunMeter:
    project_id: str
    project_name: str
    user_key: str
    thread_id: str
    run_id: str
    model: str
    provider: str
    started_at: float = field(default_factory=time.monotonic)
    first_output_at: float | None = None
    tool_calls: Counter = field(default_factory=Counter)  # (kind, outcome) -> calls
    span: Any = None  # the run's `invoke_agent` span while tracing is on
    ended: bool = False
    # The model names the project offers: only these (and the server's own) become metric labels.
    offered: frozenset = frozenset()

    def mark_first_output(self) -> None:
        self.first_output_at = time.monotonic()

    def tool_call(self, kind: str | None, is_error: bool) -> None:
        self.tool_calls[(kind or "unknown", "error" if is_error else "ok")] += 1

    @property
    def ttft(self) -> float | None:
        return None if self.first_output_at is None else self.first_output_at - self.started_at


def run_meter_start(*, run, thread, project, user_key: str, models=None) -> RunMeter:
    """Starts measuring `run` (kept on the Run instance, as its in-memory token usage is). `models`,
    the run's providers.chain.ModelChain, names the model the run calls first (the project's own, or
    its agent: docs/models.md#agents), which its spans name; without it, the run's requested model or
    the server's default. The run's end names the model that answered (`RunEnd`)."""
    first = models.targets[0] if models is not None else None
    meter = RunMeter(project_id=project.id, project_name=project.name, user_key=user_key, thread_id=thread.id,
                     run_id=run.id, model=first.model if first else resolved_model(run.model),
                     provider=first.provider if first else getattr(run, "provider", None) or settings.MODEL_PROVIDER,
                     offered=frozenset(project_model_names(project)))
    meter.span = tracing.run_span_start(meter)
    run._telemetry_meter = meter
    metrics.OPEN_STREAMS.inc()
    return meter


def meter_of(run) -> RunMeter | None:
    return run.__dict__.get("_telemetry_meter")


class RunEnd:
    """How one run ended, for its usage row (`record`, in the lock's transaction) and its
    observation (`observe`, after it: samples, log line, span)."""

    def __init__(self, *, run, outcome: str, error_code: str | None = None):
        self.run = run
        self.meter = meter_of(run)
        self.outcome = _OUTCOMES[outcome]
        self.error_code = error_code if self.outcome == Usage.Outcome.FAILED else None
        self.duration = None if self.meter is None else time.monotonic() - self.meter.started_at
        self.tokens = tokens_of(run.usage)
        if self.meter is not None and getattr(run, "answered_model", None):
            # The model that answered (a fallback, perhaps), not the one asked for: `provider:model`.
            provider, _, model = run.answered_model.partition(":")
            self.meter.provider, self.meter.model = provider, model or provider

    def record(self) -> None:
        """Inserts the run's usage row. Caller holds the transaction that releases the run's lock."""
        meter = self.meter
        if meter is None or meter.ended:
            return
        _USAGE_INSERT.save(Usage(
            project_id=meter.project_id, user_key=meter.user_key, kind=Usage.Kind.RUN, run_id=meter.run_id,
            thread_id=meter.thread_id, model=meter.model[:200], provider=meter.provider[:40],
            input_tokens=self.tokens["input"], output_tokens=self.tokens["output"],
            reasoning_tokens=self.tokens["reasoning"], duration_ms=_ms(self.duration), ttft_ms=_ms(meter.ttft),
            outcome=self.outcome, error_code=self.error_code))

    def observe(self, *, released: bool) -> None:
        """The run's samples, end log line and span end, once, whether or not its lock was still held."""
        meter = self.meter
        if meter is None or meter.ended:
            return
        meter.ended = True
        metrics.OPEN_STREAMS.dec()
        outcome = self.outcome if released else Usage.Outcome.FAILED
        project, model = meter.project_name, metrics.model_label(meter.model, meter.offered)
        metrics.RUNS.labels(project, model, outcome).inc()
        metrics.RUN_DURATION.labels(project, model).observe(self.duration)
        if meter.ttft is not None:
            metrics.TIME_TO_FIRST_TOKEN.labels(project, model).observe(meter.ttft)
        for kind, count in self.tokens.items():
            if count:
                metrics.TOKENS.labels(project, model, kind).inc(count)
        for (kind, result), count in meter.tool_calls.items():
            metrics.TOOL_CALLS.labels(project, kind, result).inc(count)
        metrics.fallbacks_taken(project, getattr(self.run, "model_fallbacks", None), meter.offered)
        trace_id = tracing.run_span_end(meter, outcome=outcome, error_code=self.error_code, tokens=self.tokens)
        log.info("run end", extra={"fields": {
            "project": meter.project_name, "project_id": meter.project_id, "thread": meter.thread_id,
            "run": meter.run_id, "trace_id": trace_id, "model": meter.model, "provider": meter.provider,
            "outcome": outcome, "error_code": self.error_code, "input_tokens": self.tokens["input"],
            "output_tokens": self.tokens["output"], "reasoning_tokens": self.tokens["reasoning"],
            "ttft_ms": _ms(meter.ttft), "duration_ms": _ms(self.duration)}})


def _ms(seconds: float | None) -> int | None:
    return None if seconds is None else max(0, round(seconds * 1000))
