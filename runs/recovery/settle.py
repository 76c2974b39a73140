"""Ending a run whose end could not be recorded: retried in the background until the database answers.

When the database goes away while a run is producing, storing its step and releasing its lock fail.
The client is told at once (RUN_ERROR) and the run's end is handed here: a background task stores
the step the client saw (unless a message with its id exists already) and records the run as failed,
retrying every RETRY_INTERVAL seconds for at most the lease (docs/protocol.md#after-a-crash). So the thread is free
within a few seconds of the database coming back, not when the lease runs out; and if the database
stays away longer than the lease, the expiry sweep (runs/recovery/leases.py) records the run instead, with
its last checkpoint.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time
from dataclasses import dataclass
from typing import Any

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections, transaction

from core import db_health
from runs import services
from threads import services as thread_services
from threads.models import Message

log = logging.getLogger(__name__)

RETRY_INTERVAL = 1.0
_tasks: set[asyncio.Task] = set()  # strong references, so the loop does not drop them mid-retry


async def run_end(*, thread, run, step, code: str, message: str, cancelled: bool = False) -> None:
    """Records the run as failed with `code`, storing the unsaved `step` (runs/step.py, or None) first
    (with `isCancelled` when the run was being cancelled).

    Tries once at once; if the database does not answer, hands the work to a background task and
    returns (the caller tells its client now). Never raises.
    """
    message_id, content = None, []
    if step is not None:
        step.cancel()  # components keep the props seen so far
        message_id, content = step.message_id, step.content()
    end = _End(thread, run, message_id, content, cancelled, code, message)
    if db_health.known_down():
        _schedule(end, wait_first=True)  # a try now would only wait for the pool's timeout
        return
    try:
        await sync_to_async(_record_end, thread_sensitive=False)(end)
        return
    except Exception:  # noqa: BLE001 - retried in the background
        log.warning("Run %s: could not record its end yet; retrying in the background", run.id)
    _schedule(end, wait_first=True)


@dataclass(frozen=True)
class _End:
    """How a run ended, to be recorded: the unsaved step (`content` under `message_id`) and the failure."""

    thread: Any
    run: Any
    message_id: str | None
    content: list[dict]
    cancelled: bool
    code: str
    message: str


def _schedule(end: _End, *, wait_first: bool) -> None:
    """Records `end` in a background task (the first try after RETRY_INTERVAL unless `wait_first` is
    False). Must be called on the event loop; returns at once."""
    task = asyncio.get_running_loop().create_task(
        _retry(end, wait_first),
        # Process-wide work: it must not keep the ending request's sync thread alive.
        context=contextvars.Context())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def _retry(end: _End, wait_first: bool) -> None:
    deadline = time.monotonic() + settings.RUN_LEASE_SECONDS
    while True:
        if wait_first:
            await asyncio.sleep(RETRY_INTERVAL)
        wait_first = True
        if db_health.known_down():
            if time.monotonic() + RETRY_INTERVAL >= deadline:
                log.error("Run %s: could not record its end; the expiry sweep will", end.run.id)
                return
            continue
        try:
            await sync_to_async(_record_end, thread_sensitive=False)(end)
            log.info("Run %s: its end was recorded after a database failure", end.run.id)
            return
        except Exception:  # noqa: BLE001 - retried until the lease would have run out
            if time.monotonic() + RETRY_INTERVAL >= deadline:
                log.error("Run %s: could not record its end; the expiry sweep will", end.run.id)
                return


def _record_end(end: _End) -> None:
    """Stores the step (if it is not stored) and releases the lock as failed, in one transaction.

    Runs on a worker thread and closes its connection whatever happens: a connection the outage
    broke would fail every retry, and no request ever ends on this thread to close it.
    """
    try:
        with transaction.atomic():
            if end.message_id and end.content and not Message.objects.filter(id=end.message_id).exists():
                thread_services.message_create(thread=end.thread, role=Message.Role.ASSISTANT, content=end.content,
                                               run_id=end.run.id, message_id=end.message_id,
                                               is_cancelled=end.cancelled)
            services.run_fail(thread=end.thread, run=end.run, code=end.code, message=end.message)
    finally:
        connections.close_all()
