"""One run start for every entrance (docs/architecture.md#one-of-each-bounded-under-failure).

Each entrance's adapter (/v1 new thread, existing thread, tool-result continuation: runs/services.py
`run_start`; AG-UI: runs/agui/services.py `agui_run_start`) reads its wire shape into one
`RunRequest`; `run_begin` applies the project's rules to it in one order, the same for all:

1. access: the requester's user key, checked by the adapter (`Principal.user_key_checked`), and
   the thread scoped to it (404 for another user's);
2. the model rules, which read no statement: the allowed model (400 MODEL_NOT_ALLOWED), the output
   cap and the context budget (a new message larger than it alone: 400 CONTEXT_TOO_LARGE);
3. the limits: the run rates and the token budgets, the run's worst case reserved (429), in one
   statement of their own. They come after the rules that cost nothing, so a refused model spends
   no rate; a start refused after them gives its reservation back;
4. in one transaction: the thread read with its row lock (or created holding the run lock), the
   request's own checks against it (400 INVALID_PREVIOUS_RUN, INVALID_TOOL_RESULT) before the
   lock's (409 CONCURRENT_RUN), then the lock (`with lock_held(...)`) and the turn stored;
5. the history read after the commit, then the run's telemetry started, by an explicit call.
"""
from __future__ import annotations

import logging
from contextlib import nullcontext
from dataclasses import dataclass, field
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, transaction
from django.utils import timezone

from clientsdk import wire
from core.statements import Insert
from projects import limits
from projects.auth import Principal
from projects.config import output_cap, project_settings
from projects.models_config import model_chain_for
from providers.chain import ModelChain
from providers.estimate import message_tokens
from runs.context_budget import check_new_message, run_budget
from runs.lock import lock_held, lock_hold_new
from runs.models import Run
from runs.start_history import history_after_lock
from runs.starting import starting_done
from runs.tool_counts import TurnToolCounts, turn_limit
from runs.turns import Turn, turn_store
from telemetry.calls import run_admit, run_charge
from telemetry.runs import run_meter_start
from threads import services as thread_services
from threads.models import Message, RunStatus, Thread
from threads.statements import ScopedThreadLock
from tools.selectors import ProjectTools, project_tools, project_tools_of
from tools.statements import tool_columns

logger = logging.getLogger(__name__)

_RUN_INSERT = Insert(Run)
# The requester's thread with the project's tools, read and row-locked in one statement written once.
_THREAD_AND_TOOLS = ScopedThreadLock(tool_columns, ("tools_enabled", "tools_mcp"))


@dataclass
class StartedRun:
    """Everything the advance loop needs, read while the lock was taken."""

    thread: Thread
    run: Run
    body: wire.CreateRunBody
    history: list[Message]
    created_thread: bool = False
    tools: ProjectTools = field(default_factory=ProjectTools)  # the project's server tools, read with the lock
    budget: limits.Budget | None = None  # the tokens the run may still spend (projects/limits.py)
    tool_counts: TurnToolCounts = field(init=False)  # from the calls made earlier in this user turn
    models: ModelChain | None = None  # the project's models for this run (projects/models_config.py)
    context_budget: int | None = None  # input tokens the model may be sent (runs/context_budget.py)
    resumed: Any = None  # a run taken over from another process: how it goes on (runs/recovery/takeover.py)

    def __post_init__(self) -> None:
        limit = turn_limit(self.thread.project.max_tool_calls_per_turn, settings.MAX_TOOL_CALLS_PER_TURN)
        self.tool_counts = TurnToolCounts.of_turn(self.history, turn_limit=limit,
                                                  max_identical=settings.MAX_IDENTICAL_TOOL_CALLS)


@dataclass(frozen=True)
class NewThread:
    """A /v1 request's new thread: created in the start's transaction, holding the lock from its INSERT."""

    metadata: dict[str, Any] | None = None
    initial_messages: tuple = ()


@dataclass
class TurnRead:
    """A request read against its thread (`RunRequest.read_turn`)."""

    turn: Turn
    body: wire.CreateRunBody  # what the advance loop reads: the /v1 body, or the AG-UI turn as one
    previous_run_id: str | None
    state: Any = None  # AG-UI: the state the thread keeps from now on; None leaves it as it is


@dataclass
class RunRequest:
    """One run request, whatever its wire shape: what `run_begin` needs. An entrance's adapter fills
    it and says, in `read_turn`, how its request reads against the thread (the one step that needs
    the thread: which messages are new, which tool calls they answer)."""

    principal: Principal
    user_key: str  # the requester's, already checked (access)
    model: str | None  # the model asked for; None: the project's first
    max_tokens: int | None
    request_params: dict[str, Any]  # what the Run row records of the request
    resume: dict[str, Any] = field(default_factory=dict)  # what a takeover needs of it (runs/recovery)
    # Where the run goes: exactly one of these, none for a thread the request does not name.
    thread_id: str | None = None  # an existing thread of the requester's, by the server's id
    client_thread_id: str | None = None  # AG-UI: the client's own id; the user's thread found or created
    new_thread: NewThread | None = None  # /v1: a new thread
    # The new message's content when it is known before the thread is read (/v1): checked against the
    # context budget and reserved before anything is counted. None (AG-UI): checked once it is read.
    content: list | None = None
    tools: ProjectTools | None = None  # the project's server tools when the caller read them already

    def read_turn(self, thread: Thread) -> TurnRead:
        """The request's turn against `thread`, row-locked in the start's transaction; raises the
        request's own 400s (docs/protocol.md#starting-a-run, checks 3-4). No statement but reads."""
        raise NotImplementedError


def run_begin(request: RunRequest) -> StartedRun:
    """Starts a run: the rules in their one order (module docstring), the lock taken straight into
    STREAMING (the loop starts the model at once) and the turn stored, then the history and the
    run's telemetry. One transaction for the thread, the lock, the Run row and the turn, so a refused
    request leaves nothing behind; a refused one gives back the tokens its admission reserved.
    Raises Problem for every refusal."""
    principal = request.principal
    project = principal.project
    models, context_budget = run_model_rules(principal, requested=request.model, max_tokens=request.max_tokens)
    if request.content is not None:
        check_new_message(system_prompt=project.system_prompt, content=request.content, budget=context_budget)
    budget = run_admit(project=project, user_key=request.user_key,
                       reserve=run_reservation(principal, request.content or [], context_budget,
                                               request.max_tokens))
    run = Run(model=request.model, request_params=request.request_params, status=Run.Status.STREAMING,
              started_at=timezone.now(), resume=request.resume)
    run_reserved_note(run, budget)
    try:
        return _begin(request, run, models, context_budget, budget)
    except BaseException:
        starting_done(run.id)  # no lease of a refused start for the watcher to renew (runs/starting.py)
        _reservation_return(request, budget)
        raise


def _begin(request: RunRequest, run: Run, models: ModelChain, context_budget: int | None,
           budget: limits.Budget | None) -> StartedRun:
    """The thread, the lock and the turn in one transaction, then the history and the telemetry."""
    project = request.principal.project
    with transaction.atomic():
        thread, tools, created = _thread_row(request, run)
        read = request.read_turn(thread)  # the request's checks, before the lock's own
        if request.content is None:
            check_new_message(system_prompt=project.system_prompt, content=read.body.message.wire()["content"],
                              budget=context_budget)
        # A thread created here holds the lock from its INSERT: nothing to check and nothing to write.
        with nullcontext(thread) if created else lock_held(thread=thread, run_id=run.id,
                                                           status=RunStatus.STREAMING):
            stored = _turn_store(thread, run, read)
    # The history (images and all) is read after the commit, not in the lock's transaction: the run
    # holds the lock now, so no other run writes the thread's messages meanwhile. A new thread's
    # history without initial messages is exactly what was just stored.
    if created and not request.new_thread.initial_messages:
        history = stored
    else:
        history = history_after_lock(thread=thread, run=run, budget=context_budget)
    thread.project = project  # the loop reads it from async code: no lazy loads there
    started = StartedRun(thread=thread, run=run, body=read.body, history=history, created_thread=created,
                         tools=tools if tools is not None else project_tools_of(project), budget=budget,
                         models=models, context_budget=context_budget)
    run_meter_start(run=run, thread=thread, project=project, user_key=thread.user_key, models=started.models)
    return started


def _thread_row(request: RunRequest, run: Run) -> tuple[Thread, ProjectTools | None, bool]:
    """(the run's thread, read with its row lock or created holding the run lock; the project's tools
    when read with it; whether it was created holding the lock). Caller holds the transaction."""
    project = request.principal.project
    if request.new_thread is not None:
        spec = request.new_thread
        thread = thread_services.thread_create(
            project=project, user_key=request.user_key, metadata=spec.metadata,
            initial_messages=spec.initial_messages,
            before_insert=lambda new: lock_hold_new(thread=new, run_id=run.id, status=RunStatus.STREAMING))
        return thread, request.tools, True
    thread_id = request.thread_id
    if thread_id is None:
        thread_id, created = _client_thread(request)
        if created is not None:  # nobody else sees it before the commit: no need to read it again
            return created, request.tools, False
    thread = _THREAD_AND_TOOLS.lock(thread_id=thread_id, project_id=project.pk, user_key=request.user_key)
    return thread, project_tools(thread), False


def _client_thread(request: RunRequest) -> tuple[str, Thread | None]:
    """(the id of the user's thread named by the client's own id, the thread when this request
    created it on first use, in the caller's transaction). Scoped to the user: another user's same
    id names another thread."""
    project, user_key, external_id = request.principal.project, request.user_key, request.client_thread_id
    mine = Thread.objects.filter(project=project, user_key=user_key, external_id=external_id).values_list(
        "id", flat=True)
    found = mine.first()
    if found is not None:
        return found, None
    try:
        with transaction.atomic():
            created = thread_services.thread_create(project=project, user_key=user_key, external_id=external_id)
        return created.id, created
    except IntegrityError:
        # A concurrent first request created it meanwhile; the lock then tells the two apart.
        return mine.get(), None


def _turn_store(thread: Thread, run: Run, read: TurnRead) -> list[Message]:
    """The Run row and the turn, written holding the lock; the thread's changes (pending calls
    answered, the state) are written with the lock's own UPDATE. Caller holds the transaction."""
    run.thread = thread
    run.previous_run_id = read.previous_run_id
    _RUN_INSERT.save(run)
    stored = turn_store(thread=thread, run=run, turn=read.turn)
    thread.pending_tool_call_ids = []
    thread.pending_inputs = None
    if read.state is not None:
        thread.agui_state = read.state
    return stored


def _reservation_return(request: RunRequest, budget: limits.Budget | None) -> None:
    """Gives back what a refused start's admission reserved (one statement), so a refused request
    costs its user no tokens."""
    if budget is None or not budget.reserved:
        return
    try:
        run_charge(project=request.principal.project, user_key=request.user_key, usage=None,
                   reserved=budget.reserved)
    except DatabaseError:
        # The database is gone: the day's count keeps the reservation (it errs on the safe side).
        logger.warning("could not give back the reservation of a refused run start")


def run_model_rules(principal: Principal, *, requested: str | None,
                    max_tokens: int | None) -> tuple[ModelChain, int | None]:
    """The project's model rules for a run: the models it calls (400 MODEL_NOT_ALLOWED for one the
    project does not offer), with the project's output cap, and its context budget, the input tokens
    the model may be sent (runs/context_budget.py; None: no budget). Reads no statement."""
    return model_chain_for(principal.project, requested=requested), run_budget(principal.project, max_tokens)


def run_reservation(principal: Principal, content: list, context_budget: int | None, max_tokens: int | None) -> int:
    """A run's worst case, reserved against the token budgets at admission (projects/limits.py
    `call_admit`): its input (the context budget the project sets, else the system prompt and the new
    message, estimated) plus its output cap (the run's `maxTokens` or the project's `maxOutputTokens`,
    else BUDGET_RESERVED_OUTPUT_TOKENS). The server's default budget (DEFAULT_MAX_INPUT_TOKENS) is not
    reserved whole: on a project with a small token budget it would refuse every run but the first."""
    config = project_settings(principal.project)
    if not (config.limits.tokens_per_day or config.limits.tokens_per_day_per_user):
        return 0
    cap = output_cap(config)
    output = (min(max_tokens, cap) if max_tokens and cap else max_tokens or cap) or settings.BUDGET_RESERVED_OUTPUT_TOKENS
    if context_budget is not None and config.max_input_tokens:
        return context_budget + output
    return (message_tokens({"content": principal.project.system_prompt}) + message_tokens({"content": content})
            + output)


def run_reserved_note(run: Run, budget: limits.Budget | None) -> None:
    """Keeps the admission's reservation on the run (in memory, as its usage), for its end to reconcile."""
    run.tokens_reserved = budget.reserved if budget is not None else 0
