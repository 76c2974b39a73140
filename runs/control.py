"""Cancelling a run that streams in this process, and the per-process watcher.

`RunControl` lets anything (a DELETE in this process, the watcher that saw a cancel flagged by
another process, the client disconnecting) stop a run at once: the model stream or tool call in
flight is a task that gets cancelled, so the provider's HTTP request is closed immediately rather
than at its next chunk.

The watcher is one task per process. Every RUN_WATCH_INTERVAL seconds it renews the leases of all
runs this process streams with one UPDATE and looks for cancels requested through the database
with one SELECT (spec section 8: batched, never one query per run).
"""
from __future__ import annotations

import asyncio
import contextvars
import logging
from typing import Any, AsyncIterator, Awaitable, TypeVar

from django.conf import settings

from tambo_project.db import db_call

log = logging.getLogger(__name__)
T = TypeVar("T")

_DONE = object()
_CANCELLED = object()
_YIELD_EVERY = 16


class RunCancelled(Exception):
    def __init__(self, reason: str):
        super().__init__(reason)
        self.reason = reason


class RunControl:
    def __init__(self, run_id: str):
        self.run_id = run_id
        self.cancel_reason: str | None = None
        # Set once the run no longer holds the lock (paused or finished): cancelling is then a no-op.
        self.settled = False
        self._task: asyncio.Task | None = None
        self._queue: asyncio.Queue | None = None

    @property
    def cancelled(self) -> bool:
        return self.cancel_reason is not None

    def cancel(self, reason: str) -> bool:
        if self.settled or self.cancelled:
            return False
        self.cancel_reason = reason
        if self._task is not None and not self._task.done():
            self._task.cancel()
        if self._queue is not None:
            # Wakes the reader even if the pump had not started yet.
            self._queue.put_nowait(_CANCELLED)
        return True

    def check(self) -> None:
        if self.cancel_reason is not None:
            raise RunCancelled(self.cancel_reason)

    async def call(self, awaitable: Awaitable[T]) -> T:
        """Awaits `awaitable` as a task that `cancel()` stops at once; raises RunCancelled then."""
        self.check()
        self._task = asyncio.ensure_future(awaitable)
        try:
            return await self._task
        except asyncio.CancelledError:
            if self.cancelled:
                raise RunCancelled(self.cancel_reason) from None
            raise
        finally:
            self._task = None

    async def stream(self, source: AsyncIterator[T]) -> AsyncIterator[T]:
        """Iterates `source` in a pump task that `cancel()` stops at once (closing `source`)."""
        queue: asyncio.Queue = asyncio.Queue()

        async def pump() -> None:
            try:
                async for item in source:
                    queue.put_nowait(item)
                    # A source that never waits (a cached or local model) would otherwise hold the
                    # event loop until it ends, and nothing would reach the socket before that.
                    # Yielding every few items lets what is ready go out together in one write.
                    if queue.qsize() >= _YIELD_EVERY:
                        await asyncio.sleep(0)
                queue.put_nowait(_DONE)
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # handed to the reader, which re-raises it
                queue.put_nowait(exc)
            finally:
                aclose = getattr(source, "aclose", None)
                if aclose is not None:
                    await aclose()

        self.check()
        self._queue = queue
        self._task = asyncio.ensure_future(pump())
        try:
            while True:
                item = await queue.get()
                if item is _DONE:
                    return
                if item is _CANCELLED:
                    raise RunCancelled(self.cancel_reason or "cancelled")
                if isinstance(item, BaseException):
                    raise item
                yield item
        finally:
            if not self._task.done():
                self._task.cancel()
                try:
                    await self._task
                except BaseException:  # noqa: BLE001 - it is being torn down
                    pass
            self._task = None
            self._queue = None


class Watcher:
    """The process-wide registry of streaming runs with its renew-and-poll loop."""

    def __init__(self) -> None:
        self.controls: dict[str, RunControl] = {}
        self._task: asyncio.Task | None = None

    def register(self, control: RunControl) -> None:
        """Adds a run; starts the watcher task on the running loop unless one already runs there."""
        self.controls[control.run_id] = control
        loop = asyncio.get_running_loop()
        # A task left behind by a loop that closed without cancelling it is never done, yet never runs.
        if self._task is None or self._task.done() or self._task.get_loop() is not loop:
            # A fresh context: the watcher outlives the request that happens to start it, and must
            # not carry that request's context (its thread-sensitive executor, for one).
            self._task = loop.create_task(self._loop(), context=contextvars.Context())

    def unregister(self, control: RunControl) -> None:
        self.controls.pop(control.run_id, None)

    def cancel_local(self, run_id: str, reason: str) -> bool:
        control = self.controls.get(run_id)
        return control.cancel(reason) if control is not None else False

    async def _loop(self) -> None:
        while self.controls:
            await asyncio.sleep(settings.RUN_WATCH_INTERVAL)
            run_ids = [rid for rid, control in self.controls.items() if not control.settled]
            if not run_ids:
                continue
            try:
                flagged = await db_call(_renew_and_poll, run_ids)
            except Exception:  # noqa: BLE001 - a failed tick must not kill the watcher
                log.exception("Run watcher tick failed")
                continue
            for run_id in flagged:
                self.cancel_local(run_id, "cancelled")


def _renew_and_poll(run_ids: list[str]) -> list[str]:
    from django.db import close_old_connections

    from runs.lock import lock_renew
    from runs.models import Run

    try:
        lock_renew(run_ids=run_ids)
        return list(Run.objects.filter(id__in=run_ids, cancel_requested=True).values_list("id", flat=True))
    except Exception:
        # No request ever starts on the watcher's thread, so nothing else would close a connection
        # that a database outage broke, and every later tick would fail on it.
        close_old_connections()
        raise


watcher = Watcher()
