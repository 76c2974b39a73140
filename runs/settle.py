"""Ending a run whose end could not be recorded: retried in the background until the database answers.

When the database goes away while a run is producing, storing its step and releasing its lock fail.
The client is told at once (RUN_ERROR) and the run's end is handed here: a background task stores
the step the client saw (unless a message with its id exists already) and records the run as failed,
retrying every RETRY_INTERVAL seconds for at most the lease (spec section 14). So the thread is free
within a few seconds of the database coming back, not when the lease runs out; and if the database
stays away longer than the lease, the expiry sweep (runs/recovery.py) records the run instead, with
its last checkpoint.
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
import time

from asgiref.sync import sync_to_async
from django.conf import settings
from django.db import connections, transaction

from runs import services
from threads import services as thread_services
from threads.models import Message

log = logging.getLogger(__name__)

RETRY_INTERVAL = 1.0
_tasks: set[asyncio.Task] = set()  # strong references, so the loop does not drop them mid-retry


async def run_end(*, thread, run, step, code: str, message: str) -> None:
    """Records the run as failed with `code`, storing the unsaved `step` (runs/step.py, or None) first.

    Tries once at once; if the database does not answer, hands the work to a background task and
    returns (the caller tells its client now). Never raises.
    """
    message_id, content = None, []
    if step is not None:
        step.cancel()  # components keep the props seen so far
        message_id, content = step.message_id, step.content()
    try:
        await sync_to_async(_record_end, thread_sensitive=False)(thread, run, message_id, content, code, message)
        return
    except Exception:  # noqa: BLE001 - retried in the background
        log.warning("Run %s: could not record its end yet; retrying in the background", run.id)
    run_end_later(thread=thread, run=run, message_id=message_id, content=content, code=code, message=message)


def run_end_later(*, thread, run, message_id: str | None, content: list[dict], code: str, message: str,
                  wait_first: bool = True) -> None:
    """Schedules recording the run as failed with `code`, storing `content` as the assistant message
    `message_id` first (the first try after RETRY_INTERVAL unless `wait_first` is False). Must be
    called on the event loop; returns at once."""
    task = asyncio.get_running_loop().create_task(
        _retry(thread, run, message_id, content, code, message, wait_first),
        # Process-wide work: it must not keep the ending request's sync thread alive.
        context=contextvars.Context())
    _tasks.add(task)
    task.add_done_callback(_tasks.discard)


async def _retry(thread, run, message_id, content, code, message, wait_first: bool) -> None:
    deadline = time.monotonic() + settings.RUN_LEASE_SECONDS
    while True:
        if wait_first:
            await asyncio.sleep(RETRY_INTERVAL)
        wait_first = True
        try:
            await sync_to_async(_record_end, thread_sensitive=False)(thread, run, message_id, content, code, message)
            log.info("Run %s: its end was recorded after a database failure", run.id)
            return
        except Exception:  # noqa: BLE001 - retried until the lease would have run out
            if time.monotonic() + RETRY_INTERVAL >= deadline:
                log.error("Run %s: could not record its end; the expiry sweep will", run.id)
                return


def _record_end(thread, run, message_id, content, code, message) -> None:
    """Stores the step (if it is not stored) and releases the lock as failed, in one transaction.

    Runs on a worker thread of its own and closes its connection whatever happens: a connection the
    outage broke would fail every retry, and no request ever ends on this thread to close it.
    """
    try:
        with transaction.atomic():
            if message_id and content and not Message.objects.filter(id=message_id).exists():
                thread_services.message_create(thread=thread, role=Message.Role.ASSISTANT, content=content,
                                               run_id=run.id, message_id=message_id)
            services.run_failed(thread=thread, run=run, code=code, message=message)
    finally:
        connections.close_all()


def start_abandoned(*, thread_id: str, run_id: str) -> None:
    """The lock was taken but starting the run failed after it (the database went away): record the
    run as failed in the background so the thread is freed as soon as the database answers."""
    from runs.models import Run
    from threads.models import Thread

    run_end_later(thread=Thread(id=thread_id), run=Run(id=run_id), message_id=None, content=[],
                  code="SERVICE_UNAVAILABLE", message="The service was unavailable while the run started.",
                  wait_first=False)
