"""The one door of every model call (docs/architecture.md#the-metered-model-call): a run's steps, the
gateway's completions, thread names, suggestions, memory extractions and transcriptions all reach a
model through here, and nowhere else (tests/telemetry/test_one_door.py holds every call site to it).

For each call, in one place:
- admission (`call_admit`): the project's rates and budgets (projects/limits.py), with the call's worst
  case in tokens reserved against the budgets in the admitting statement (`call_reservation`), so N
  concurrent calls overshoot a budget by at most one reservation; a run's later steps are admitted by
  `step_admit`, each reserving its own worst case the same way (the run's own start is admitted by
  runs/begin.py `run_begin`);
- the call (`model_stream` for streamed deltas, `model_complete` for one answer, `model_transcribe`
  for a recording) through the project's models and fallbacks (projects/models_config.py);
- what it used: the vendor's usage, or the estimate of what was sent and received when the vendor
  reported none (providers/usage_estimate.py: a cancel, a disconnect, a vendor cut or timeout, a vendor
  that ignores `include_usage`); a call the vendor refused before reading it uses nothing;
- its end, once: the reservation reconciled with what was used and the usage row written (one worker
  hop, telemetry/call_settle.py), `tambo_model_calls_total` and the token counters. A run's steps are
  summed on the run instead, and recorded with the run's end, its reservations (its start's and each
  later step's) reconciled in the transaction that releases its lock (runs/services.py, telemetry/runs.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import IO, AsyncIterator

from django.conf import settings

from core.db import db_call
from core.problems import Problem
from projects import limits
from projects.config import output_cap, project_settings
from projects.models_config import model_chain_for
from providers import get_provider, transcription
from providers.base import Completion, Delta, ModelError, ModelRequest, Provider, StepEnd
from providers.chain import ModelChain, max_tokens_capped
from providers.estimate import MEDIA_PART_TOKENS, prompt_tokens, text_tokens
from providers.usage_estimate import CallTally
from telemetry import metrics
from telemetry.call_settle import call_settle
from telemetry.models import Usage

RUN = Usage.Kind.RUN


@dataclass(frozen=True)
class CallScope:
    """Who a call is for and what its usage row says."""

    project: object
    kind: str  # Usage.Kind
    user_key: str | None = None  # the stored key the limits count (None: the project's limits only)
    thread_id: str | None = None
    recorded_user: str | None = None  # the row's user when not `user_key` (the gateway's session or token user)
    model: str | None = None  # what the row names for a call that is not a ModelChain's
    provider: str | None = None

    @property
    def row_user(self) -> str:
        return self.recorded_user if self.recorded_user is not None else (self.user_key or "")


@dataclass(frozen=True)
class Admission:
    """One admitted call: what it reserved against the budgets, reconciled when it ends."""

    scope: CallScope
    budget: limits.Budget | None = None

    @property
    def reserved(self) -> int:
        return self.budget.reserved if self.budget is not None else 0


def call_reservation(project, *, input_tokens: int, max_tokens: int | None) -> int:
    """A call's worst case in tokens: its input estimate plus its output (its `max_tokens` under the
    project's output cap, else the cap, else BUDGET_RESERVED_OUTPUT_TOKENS). 0 on a project without
    token budgets: nothing is reserved, and admission stays one statement."""
    if not _budgeted(project):
        return 0
    return input_tokens + (max_tokens_capped(max_tokens, output_cap(project_settings(project)))
                           or settings.BUDGET_RESERVED_OUTPUT_TOKENS)


def _budgeted(project) -> bool:
    limits = project_settings(project).limits
    return bool(limits.tokens_per_day or limits.tokens_per_day_per_user)


async def call_admit(scope: CallScope, *, reserve: int = 0) -> Admission:
    """Counts one call against the project's rates and reserves `reserve` tokens against its budgets
    (projects/limits.py `call_admit`, one statement). Raises Problem 429 RATE_LIMITED / BUDGET_EXCEEDED."""
    return Admission(scope, await db_call(limits.call_admit, project=scope.project, user_key=scope.user_key,
                                          reserve=reserve))


def run_admit(*, project, user_key: str | None, reserve: int) -> limits.Budget | None:
    """A run's admission, for the one run start (runs/begin.py), which is already on a database thread:
    the run rates counted once and the run's worst case reserved (the same statement as `call_admit`).
    Its later model calls go through `step_admit`; its end through `run_charge`. Raises Problem 429."""
    return limits.call_admit(project=project, user_key=user_key, reserve=reserve)


def run_charge(*, project, user_key: str | None, usage: dict | None, reserved: int) -> None:
    """A run's tokens charged at its end (in the transaction that releases its lock) and its
    reservation reconciled; a start refused after its admission gives the reservation back (`usage` None)."""
    limits.call_record(project=project, user_key=user_key, usage=usage, reserved=reserved)


async def step_admit(scope: CallScope, *, budget: limits.Budget | None, usage: dict | None, reserved: int,
                     messages: list[dict], max_tokens: int | None, first: bool) -> int:
    """Before each model call of a run, which sends `messages` asking for `max_tokens`. The first was
    admitted by the run's start a moment ago, its worst case reserved: its budget is checked in memory.
    Each later one (and a taken-over run's first in its new process) reserves its own worst case (its
    input estimate plus its output cap, as `call_reservation` counts any call) against the day's
    budgets as they stand now, its finished steps settled in the same statement (their `usage` in
    place of the `reserved`; projects/limits.py `step_admit`, one statement; no hop without budgets);
    the run rate counts the run once. Answers the tokens added to the counts (negative: given back),
    which the run adds to its reservation for its end to reconcile (`run_charge`). Raises ModelError
    BUDGET_EXCEEDED, which ends the run with RUN_ERROR."""
    if first:
        # Admitted with its worst case reserved, the call fits: the count its admission raised was
        # under the budget. (The budget left it read can be older than that row on PostgreSQL, when a
        # run's end gave tokens back while the admission waited for the row: checking it again
        # refused a run its admission had let in, before any model call.)
        if budget is None or not budget.reserved:
            limits.budget_check(budget, usage)
        return 0
    if not _budgeted(scope.project):  # nothing to reserve: no estimate, no hop
        return 0
    reserve = call_reservation(scope.project, input_tokens=prompt_tokens(messages), max_tokens=max_tokens)
    return await db_call(limits.step_admit, project=scope.project, user_key=scope.user_key, usage=usage,
                         reserved=reserved, reserve=reserve)


class ModelCall:
    """One streamed call: iterate it for the deltas (iterating it is iterating the door's own async
    generator: no wrapper per delta beyond it), close it to stop the vendor. `usage` is what it used
    so far. Once iterated, its end is settled once, however it ends: exhausted, failed, closed,
    cancelled, or collected unfinished (the event loop closes an abandoned async generator)."""

    def __init__(self, models: Provider | ModelChain, request: ModelRequest, scope: CallScope,
                 admission: Admission | None):
        self.scope = scope
        self.outcome = Usage.Outcome.CANCELLED
        self._models, self._request, self._admission = models, request, admission
        self._tally = CallTally(request.messages)
        self._began = self._refused = False
        self._code: str | None = None
        self._deltas = self._stream()

    def __aiter__(self) -> AsyncIterator[Delta]:
        return self._deltas

    def __anext__(self):
        return self._deltas.__anext__()

    def aclose(self):
        return self._deltas.aclose()

    @property
    def usage(self) -> dict | None:
        """The vendor's usage, else the estimate; None for a call never made or refused before the
        vendor read it (a 4xx/5xx, a missing key, no connection: ModelError.accepted is False)."""
        if not self._began or self._refused:
            return None
        return self._tally.usage()

    async def _stream(self) -> AsyncIterator[Delta]:
        self._began = True
        started, tally = time.monotonic(), self._tally
        deltas = self._models.stream(self._request)
        try:
            async for delta in deltas:
                tally.see(delta)
                if isinstance(delta, StepEnd):
                    self.outcome = Usage.Outcome.COMPLETED
                yield delta
        except ModelError as exc:
            self.outcome, self._code = Usage.Outcome.FAILED, exc.code
            self._refused = tally.deltas == 0 and not exc.accepted
            raise
        finally:
            await deltas.aclose()
            metrics.model_call(self.scope.project, self.scope.kind, self.outcome)
            if self.scope.kind != RUN:
                model, provider = _answering(self._models, self._request, self.scope)
                await call_settle(self._admission or Admission(self.scope), models=self._models, model=model,
                                  provider=provider, usage=self.usage, duration=time.monotonic() - started,
                                  outcome=self.outcome, code=self._code)


def model_stream(models: Provider | ModelChain, request: ModelRequest, scope: CallScope, *,
                 admission: Admission | None = None) -> ModelCall:
    """The deltas of one call of `models` (a ModelChain: the project's models and fallbacks), metered.
    Nothing is called until it is iterated. A call of a run (`scope.kind` "run") leaves its usage on
    `ModelCall.usage` for the run to sum; any other records its row and reconciles `admission` at its end."""
    return ModelCall(models, request, scope, admission)


async def model_complete(request: ModelRequest, *, project, user_key: str | None, kind: str,
                         thread_id: str | None = None, admit: bool = True) -> Completion:
    """The answer of the project's models (its first, then its fallbacks; the server's default without
    a project); raises Problem (429/502) when the model fails.

    Admitted first with its worst case reserved (429 RATE_LIMITED / BUDGET_EXCEEDED) unless `admit` is
    False (a retry within the same request); its tokens counted after. Each call leaves one usage row
    of `kind` ("name", "suggestions", "memory"), answered or failed. The side tasks (assist/, memory/)
    all call the model through here.
    """
    if project is None:
        try:
            return await get_provider().complete(request)
        except ModelError as exc:
            raise model_problem(exc) from exc
    scope = CallScope(project, kind, user_key=user_key, thread_id=thread_id)
    models = model_chain_for(project, requested=None)
    admission = Admission(scope)
    if admit:
        admission = await call_admit(scope, reserve=call_reservation(
            project, input_tokens=prompt_tokens(request.messages), max_tokens=request.max_tokens))
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
        raise model_problem(exc) from exc
    finally:
        metrics.model_call(project, kind, outcome)
        model, provider = _answering(models, request, scope)
        await call_settle(admission, models=models, model=model, provider=provider, usage=usage,
                          duration=time.monotonic() - started, outcome=outcome, code=code)


async def model_transcribe(target: transcription.TranscriptionTarget, scope: CallScope, *, file: IO[bytes],
                           filename: str, content_type: str) -> str:
    """The transcript of a recording (providers/transcription.py), admitted like any call (429) and
    charged: the vendor's token usage when it reports one, else the estimate of one audio part in
    (MEDIA_PART_TOKENS, as a run's input counts a recording) and the transcript's text out. Raises
    TranscriptionError (nothing charged but the input of one that timed out: the vendor had it)."""
    admission = await call_admit(scope, reserve=call_reservation(scope.project, input_tokens=MEDIA_PART_TOKENS,
                                                                 max_tokens=None))
    started, usage, outcome, code = time.monotonic(), None, Usage.Outcome.CANCELLED, None
    try:
        transcript = await transcription.transcribe(target, file=file, filename=filename, content_type=content_type)
        usage, outcome = transcript.usage or _transcript_estimate(transcript.text), Usage.Outcome.COMPLETED
        return transcript.text
    except transcription.TranscriptionError as error:
        outcome, code = Usage.Outcome.FAILED, error.code
        if error.code == "TRANSCRIPTION_TIMEOUT":
            usage = {"prompt_tokens": MEDIA_PART_TOKENS, "completion_tokens": 0, "total_tokens": MEDIA_PART_TOKENS,
                     "estimated": True}
        raise
    finally:
        metrics.model_call(scope.project, scope.kind, outcome)
        await call_settle(admission, models=None, model=target.model, provider="openai", usage=usage,
                          duration=time.monotonic() - started, outcome=outcome, code=code)


def _transcript_estimate(text: str) -> dict:
    output = text_tokens(text)
    return {"prompt_tokens": MEDIA_PART_TOKENS, "completion_tokens": output,
            "total_tokens": MEDIA_PART_TOKENS + output, "estimated": True}


def _answering(models: Provider | ModelChain, request: ModelRequest, scope: CallScope) -> tuple[str, str]:
    """(model, provider) of the call, as its usage row names them: a chain's model that answered (its
    first when none did), else what the scope names, else the provider's."""
    if isinstance(models, ModelChain):
        target = models.answered or models.targets[0]
        return target.model, target.provider
    if scope.model is not None:
        return scope.model, scope.provider or getattr(models, "name", None) or settings.MODEL_PROVIDER
    from telemetry.runs import resolved_model

    return resolved_model(request.model), getattr(models, "name", None) or settings.MODEL_PROVIDER


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
