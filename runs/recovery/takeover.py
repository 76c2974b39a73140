"""Takeover (docs/operations.md#takeover): a run whose process died or shut down goes on in another.

- `takeover_claim`, called by every process's watcher each tick, takes the stale leases (not renewed
  for a third of RUN_LEASE_SECONDS: leases.py `stale_before`) of runs that can be taken over (a stored `Run.resume`, fewer than RUN_TAKEOVER_LIMIT takeovers, no cancel asked),
  at most as many as the process has room for (RUN_TAKEOVERS_PER_PROCESS), in one short transaction:
  the thread's lease renewed, `Run.owner` set to this process (the fence: the process that lost the run
  may write nothing for it from then on: runs/lock.py `lock_fence`) and the takeover appended to the
  run's history (`Run.takeovers`). Two processes claiming together: the thread's row lock (SKIP LOCKED on
  PostgreSQL, the write lock on SQLite) gives the run to exactly one.
- `run_resume` reads what the advance loop needs to go on from the last stored step: the step in flight
  as its client saw it (`Resumed.carried`: its message id, text and tool calls so far, from the event
  log), which the redone step carries on under the same ids (runs/carry.py says why), and what the
  client is shown first (`Resumed.preamble`): the end of whatever else it saw open, the results of
  stored calls it did not see, and a CUSTOM `tambo.run.takeover`. A step whose tool calls were stored
  without their results has those calls run again (`Resumed.redo`), unless one is a client's or not
  safe to repeat: the run then fails as it did before takeovers existed, with the reason in its message.
- `runs_hand_over` is a shutting-down process's half: once its runs stopped (their text checkpointed,
  their events logged), their leases are made to look expired and `Run.owner` set to HANDED_OVER, so
  another process's next tick takes them.
"""
from __future__ import annotations

import json
import logging
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from ag_ui.core import BaseEvent, CustomEvent, TextMessageEndEvent, ToolCallEndEvent, ToolCallResultEvent
from django.conf import settings
from django.db import connection, transaction
from django.db.models import F
from django.utils import timezone

from clientsdk import wire
from core.db import db_call
from projects.models_config import model_chain_for
from providers.base import ModelError
from runs import bodies
from runs.context_budget import history_for, run_budget
from runs.history import result_text
from runs.lock import OWNED, lock_fence
from runs.carry import Carried, CarriedCall
from runs.models import THIS_PROCESS, Run, RunEvent
from runs.reasoning import ThinkingEndEvent, ThinkingTextMessageEndEvent
from runs.recovery.leases import partial_store, stale_before, takeable_runs
from runs.services import StartedRun
from runs.step import Call, Step
from runs.toolbox import mcp_tools_load
from telemetry.runs import run_meter_start
from threads.content import block_text
from threads.models import LEASE_EXPIRED_CODE, Message, RunStatus, Thread
from threads.sealing import open_text
from tools.registry import get_tool
from tools.selectors import project_tools_of

log = logging.getLogger(__name__)

HANDED_OVER = "handed-over"  # Run.owner of a run a shutting-down process gave up: nobody may write for it
SHUTDOWN_CODE = "SERVER_SHUTTING_DOWN"
_DELTAS = {"TEXT_MESSAGE_CONTENT", "TOOL_CALL_ARGS"}  # left out of the preamble
# The events that open something the client then expects to see closed, and the event closing each.
_CLOSERS = {"TEXT_MESSAGE_START": "TEXT_MESSAGE_END", "TOOL_CALL_START": "TOOL_CALL_END",
            "THINKING_TEXT_MESSAGE_START": "THINKING_TEXT_MESSAGE_END", "THINKING_START": "THINKING_END"}


def takeover_claim(*, limit: int, held: list[str] | tuple[str, ...] = ()) -> list[str]:
    """Takes over up to `limit` runs whose lease expired (see the module docstring); returns their ids.
    `held`: the runs this process still streams or starts, never its own to take over, even when a
    renewal came late (the watcher passes them).

    One transaction of four statements whatever the number (one more per run claimed, for its history);
    a tick with nothing expired reads one index and writes nothing.
    """
    if limit <= 0 or settings.RUN_TAKEOVER_LIMIT <= 0:
        return []
    now = timezone.now()
    expired = Thread.objects.exclude(run_status=RunStatus.IDLE).filter(
        lease_expires_at__lt=stale_before(now), current_run_id__in=takeable_runs())
    # Whether anything expired at all, first: excluding the held runs is a parameter per run for the
    # ORM to compile (7 % of a serving process's CPU with 1,000 streams, every second, to find nothing).
    if not expired.exists():
        return []
    if held:
        expired = expired.exclude(current_run_id__in=list(held))
    with transaction.atomic():
        rows = expired.order_by("lease_expires_at").only("id", "current_run_id")
        if connection.vendor == "postgresql":
            rows = rows.select_for_update(skip_locked=True)
        claimed = {t.current_run_id: t.id for t in rows[:limit]}
        if not claimed:
            return []
        Thread.objects.filter(id__in=claimed.values()).update(
            run_status=RunStatus.STREAMING, lease_expires_at=now + timedelta(seconds=settings.RUN_LEASE_SECONDS),
            updated_at=now)
        for run_id, owner, history in Run.objects.filter(id__in=list(claimed)).values_list("id", "owner", "takeovers"):
            entry = {"at": now.isoformat(), "reason": "handover" if owner == HANDED_OVER else "lease_expired",
                     "by": THIS_PROCESS}
            Run.objects.filter(id=run_id).update(owner=THIS_PROCESS, takeover_count=F("takeover_count") + 1,
                                                 takeovers=[*(history or []), entry], status=Run.Status.STREAMING)
    return list(claimed)


def runs_hand_over(*, run_ids: list[str]) -> int:
    """Gives up the leases of this process's `run_ids` for another process to take over at once: the
    leases expire now and the runs' owner becomes HANDED_OVER. Call once their events are logged."""
    if not run_ids:
        return 0
    now = timezone.now()
    with transaction.atomic():
        mine = list(Run.objects.filter(OWNED, id__in=run_ids).values_list("id", flat=True))
        handed = Thread.objects.filter(current_run_id__in=mine).exclude(run_status=RunStatus.IDLE).update(
            lease_expires_at=now - timedelta(milliseconds=1), updated_at=now)
        Run.objects.filter(id__in=mine).update(owner=HANDED_OVER)
    return handed


@dataclass
class Resumed:
    """How a taken-over run goes on (StartedRun.resumed; runs/loop.py)."""

    reason: str  # "handover" or "lease_expired"
    after: int  # the last event id logged before the takeover: the new events follow it
    preamble: list[BaseEvent] = field(default_factory=list)
    refusal: str | None = None  # why the run cannot go on; it fails with `code`
    code: str = LEASE_EXPIRED_CODE
    step: Message | None = None  # the last stored step, when some of its tool calls have no stored result
    answered: dict[str, str] = field(default_factory=dict)  # its calls' stored results (text for the model)
    carried: Carried = field(default_factory=Carried)  # the step in flight as the client saw it (runs/carry.py)

    def redo(self, toolbox, messages: list[dict]) -> Step | None:
        """Raises ModelError when the run cannot go on. Else, for a stored step whose tool results
        were not all stored: appends the step and its stored results to `messages` and returns the
        step holding the calls to run again (runs/loop.py resolves them as it would have)."""
        if self.refusal is not None:
            raise ModelError(self.code, self.refusal, retryable=True)
        if self.step is None:
            return None
        uses = [b for b in self.step.content if b.get("type") == "tool_use"]
        redo = Step(message_id=self.step.id, toolbox=toolbox)
        for index, block in enumerate(b for b in uses if b["id"] not in self.answered):
            kind = toolbox.kind(block["name"])
            if kind == "client" or (kind in ("server", "mcp") and not toolbox.repeatable(block["name"])):
                what = "a client tool call was pending" if kind == "client" else \
                    f"its tool {block['name']} is not safe to run again"
                raise ModelError(self.code, f"The run could not be taken over: {what}.", retryable=True)
            call = Call(id=block["id"], name=block["name"], kind=kind)
            call.arguments = json.dumps(block.get("input") or {})
            redo.calls[index] = call
        text = "".join(block_text(b) for b in self.step.content if b.get("type") == "text")
        messages.append({"role": "assistant", "content": text or None, "tool_calls": [
            {"id": b["id"], "type": "function",
             "function": {"name": b["name"], "arguments": json.dumps(b.get("input") or {}, ensure_ascii=False)}}
            for b in uses]})
        if self.step.reasoning_blocks:
            messages[-1]["thinking_blocks"] = self.step.reasoning_blocks
        messages.extend({"role": "tool", "tool_call_id": cid, "content": text} for cid, text in self.answered.items())
        return redo


def run_resume(*, run_id: str) -> StartedRun:
    """What the advance loop needs to go on with run `run_id`, just claimed by this process.

    Reads the run, its thread and project, the thread's history and the run's logged events (their
    opening events only).
    """
    run = Run.objects.select_related("thread", "thread__project").get(id=run_id, owner=THIS_PROCESS)
    thread = run.thread
    project = thread.project
    body = bodies.CreateRunBody.model_validate(
        {**run.resume, "message": {"role": "user", "content": [{"type": "text", "text": "(taken over)"}]}})
    reason = run.takeovers[-1]["reason"] if run.takeovers else "lease_expired"
    resumed = Resumed(reason=reason, after=0, code=SHUTDOWN_CODE if reason == "handover" else LEASE_EXPIRED_CODE)
    context_budget = run_budget(project, body.max_tokens)
    history = list(history_for(thread, context_budget))
    _split_last_step(history, run, resumed)
    resumed.after, resumed.preamble = _preamble(run, thread, resumed)
    started = StartedRun(thread=thread, run=run, body=body, history=history, tools=project_tools_of(project),
                         models=model_chain_for(project, requested=body.model), context_budget=context_budget)
    started.resumed = resumed
    # The run goes on here: its meter starts again in this process (its end records the usage row).
    run_meter_start(run=run, thread=thread, project=project, user_key=thread.user_key, models=started.models)
    return started


def _split_last_step(history: list[Message], run: Run, resumed: Resumed) -> None:
    """Takes the run's last stored step out of `history` into `resumed` when some of its tool calls
    have no stored result (the process stopped while they ran): the loop runs them again."""
    steps = [i for i, m in enumerate(history) if m.role == Message.Role.ASSISTANT and m.run_id == run.id]
    if not steps:
        return
    index = steps[-1]
    step = history[index]
    uses = {b["id"] for b in step.content if b.get("type") == "tool_use"}
    results = {m.tool_call_id: m for m in history[index + 1:] if m.role == Message.Role.TOOL and m.tool_call_id in uses}
    if not uses or len(results) == len(uses):
        return
    resumed.step = step
    resumed.answered = {cid: result_text(m.content[0]) for cid, m in results.items() if m.content}
    del history[index:]  # its results (if any) follow it; nothing else of the run can


def _preamble(run: Run, thread: Thread, resumed: Resumed) -> tuple[int, list[BaseEvent]]:
    """(the last logged event id, the events the client is shown before the run goes on); sets
    `resumed.carried`, the step in flight as the client saw it (runs/carry.py), which the run goes on with.

    Reads the run's logged events once, opened in Python: an encrypting project's rows
    (threads/sealing.py) cannot be told apart in SQL, and a takeover is rare enough that reading its
    run's deltas too costs nothing that matters.
    """
    rows = list(RunEvent.objects.filter(run_id=run.id).order_by("seq").values_list("seq", "data"))
    last = rows[-1][0] if rows else 0
    events = [json.loads(open_text(data)) for _, data in rows]
    seen = _Seen()
    for event in events:
        if event.get("type") not in _DELTAS:
            seen.see(event)
    carried = seen.carried(stored=Message.objects.filter(id=seen.current).exists() if seen.current else True)
    if carried.message_id:
        carried.text = "".join(_deltas(events, "TEXT_MESSAGE_CONTENT", "messageId", carried.message_id))
        for call in carried.calls:
            call.arguments = "".join(_deltas(events, "TOOL_CALL_ARGS", "toolCallId", call.id))
    resumed.carried = carried
    # What the client saw open and the run does not carry on is closed; stored results it never saw are shown.
    keep = {("TEXT_MESSAGE_START", carried.message_id)} if carried.text_open else set()
    keep |= {("TOOL_CALL_START", call.id) for call in carried.calls if not call.ended}
    closing = [_closer(opener, key) for opener, key in reversed(list(seen.open)) if (opener, key) not in keep]
    takeover = CustomEvent(name=wire.RUN_TAKEOVER, value={"reason": resumed.reason, "takeovers": run.takeover_count})
    return last, [*closing, *_unseen_results(run, seen), takeover]


class _Seen:
    """Folds a run's logged events (less text and argument deltas) into what its client saw."""

    def __init__(self) -> None:
        self.open: dict[tuple[str, str], None] = {}  # (opener, id) the client saw open, in order
        self.current: str | None = None  # the message the last event named: the step in flight, unless stored
        self.calls: dict[str, list[CarriedCall]] = {}  # message id -> its tool calls, in order
        self.call_ids: set[str] = set()
        self.by_id: dict[str, CarriedCall] = {}
        self.results: set[str] = set()  # tool call ids whose TOOL_CALL_RESULT the client saw
        self.reasoning: dict[str | None, list[str]] = {}  # message id -> reasoning seen (None: no message yet)

    def see(self, event: dict[str, Any]) -> None:
        kind = event.get("type")
        key = event.get("messageId") or event.get("toolCallId") or ""
        if kind in _CLOSERS:
            self.open[(kind, key)] = None
        for opener, closer in _CLOSERS.items():
            if closer == kind:
                self.open.pop((opener, key), None)
        if kind == "THINKING_TEXT_MESSAGE_START":
            self.reasoning.setdefault(None, []).append("")
        elif kind == "THINKING_TEXT_MESSAGE_CONTENT":
            chunks = self.reasoning.setdefault(None, [])
            chunks[-1:] = [(chunks[-1] if chunks else "") + event.get("delta", "")]
        named = _named(event)
        if named is not None:
            # Reasoning comes before its step's text and calls: it belongs to the message named next.
            self.reasoning.setdefault(named, []).extend(self.reasoning.pop(None, []))
            self.current = named
        if kind == "TOOL_CALL_START":
            self.call_ids.add(key)
            self.by_id[key] = CarriedCall(id=key, name=event.get("toolCallName", ""))
            self.calls.setdefault(self.current, []).append(self.by_id[key])
        elif kind == "TOOL_CALL_END" and key in self.by_id:
            self.by_id[key].ended = True
        elif kind == "TOOL_CALL_RESULT":
            self.results.add(key)

    def carried(self, *, stored: bool) -> Carried:
        loose = self.reasoning.get(None, [])
        if stored:  # nothing of a new step shown but, perhaps, its reasoning
            return Carried(reasoning=list(loose))
        return Carried(message_id=self.current, text_open=("TEXT_MESSAGE_START", self.current) in self.open,
                       calls=self.calls.get(self.current, []),
                       reasoning=[*self.reasoning.get(self.current, []), *loose])


def _named(event: dict[str, Any]) -> str | None:
    """The message an event belongs to, when it names one."""
    kind = event.get("type")
    if kind in ("TEXT_MESSAGE_START", "TEXT_MESSAGE_END", "TOOL_CALL_RESULT"):
        return event.get("messageId")
    if kind == "TOOL_CALL_START":
        return event.get("parentMessageId")
    if kind == "CUSTOM" and event.get("name") == wire.COMPONENT_START:
        return (event.get("value") or {}).get("messageId")
    return None


def _deltas(events: list[dict[str, Any]], kind: str, field_name: str, key: str) -> list[str]:
    return [event["delta"] for event in events if event.get("type") == kind and event.get(field_name) == key]


def _unseen_results(run: Run, seen: _Seen) -> list[BaseEvent]:
    """TOOL_CALL_RESULT for the stored results of calls the client saw but whose result it did not (the
    process stopped between storing them and logging their events)."""
    missing = seen.call_ids - seen.results
    if not missing:
        return []
    steps = {b["id"]: m.id for m in Message.objects.filter(run_id=run.id, role=Message.Role.ASSISTANT)
             for b in m.content if b.get("type") == "tool_use" and b.get("id") in missing}
    out: list[BaseEvent] = []
    for m in Message.objects.filter(run_id=run.id, role=Message.Role.TOOL, tool_call_id__in=list(steps)).order_by(
            "created_at", "id"):
        block = next((b for b in m.content if b.get("type") == "tool_result"), None)
        if block is not None:
            out.append(ToolCallResultEvent(message_id=steps[m.tool_call_id], tool_call_id=m.tool_call_id,
                                           content=result_text(block), role="tool"))
    return out


def _closer(opener: str, key: str) -> BaseEvent:
    if opener == "TEXT_MESSAGE_START":
        return TextMessageEndEvent(message_id=key)
    if opener == "TOOL_CALL_START":
        return ToolCallEndEvent(tool_call_id=key)
    return ThinkingTextMessageEndEvent() if opener == "THINKING_TEXT_MESSAGE_START" else ThinkingEndEvent()


async def takeover_start(run_id: str) -> None:
    """Goes on with a run this process just claimed, with no reader: its events go to the event log
    after the last one its previous process logged (runs/views.py `run_unread`). Never raises: a run
    that cannot even be read is left to its lease (it expires again and counts one takeover more)."""
    from runs.views import run_unread  # the views import the watcher, which calls this

    try:
        started = await db_call(run_resume, run_id=run_id)
        refusal = await _refusal(started)
        if refusal is not None:
            started.resumed.refusal = f"The run could not be taken over: {refusal}."
            await db_call(_refuse, started)
    except Exception:  # noqa: BLE001 - logged; the lease runs out and the sweep or another process ends it
        log.exception("Run %s: could not be taken over", run_id)
        return
    run_unread(started, after=started.resumed.after)


async def _refusal(started: StartedRun) -> str | None:
    """Why the stored step's calls without a stored result cannot run again (docs/tools.md#safe-to-repeat)."""
    resumed = started.resumed
    if resumed.step is None:
        return None
    names = [b["name"] for b in resumed.step.content if b.get("type") == "tool_use" and b["id"] not in resumed.answered]
    client = {t.name for t in started.body.tools or []}
    if any(name in client for name in names):
        return "a client tool call was pending"
    others = [name for name in names if name not in started.tools.enabled]
    mcp = await mcp_tools_load(started.tools.mcp_configs) if others else {}
    for name in names:
        tool = get_tool(name) if name in started.tools.enabled else None
        if (tool is not None and not tool.repeatable) or (name in mcp and name not in mcp.repeatable):
            return f"its tool {name} is not safe to run again"
    return None


def _refuse(started: StartedRun) -> None:
    # As when a run could not be taken over: the text its client saw is kept, marked cancelled.
    with transaction.atomic():
        lock_fence(run_id=started.run.id)
        partial_store(thread=started.thread, run=started.run)
