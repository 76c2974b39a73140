"""The process runtime: what a serving process runs beside its requests, started once and stopped in
reverse, and the caches emptied when it stops (docs/architecture.md#the-process-runtime).

A part is a name, a start and a stop (either may be missing; each a plain function or a coroutine
function). `Runtime.start` starts the parts in the order they were added, once per event loop; when
one fails, the parts started before it are stopped in reverse and the error is raised (the part that
failed undoes its own half start). `Runtime.stop` stops the started parts in reverse, each even if
another failed (logged: the process is ending either way), then empties every registered cache, so a
runtime started again, on this loop or another, starts from nothing.

The server's parts are listed in one place, tambo_project/runtime.py, and its ASGI lifespan
(tambo_project/lifespan.py) starts and stops them. Code that used to start a part on first use (the
run watcher, the event-log writer) asks `process_runtime.running()` first, and starts it itself only
where no runtime runs on the loop: an in-process test client, a test or script driving the services
on a loop of its own, uvicorn run with `--lifespan off`.

A cache registers where it is defined (`cache_register`), so a module imported late (the MCP SDK's)
registers when it is imported.
"""
from __future__ import annotations

import asyncio
import inspect
import logging
from dataclasses import dataclass
from typing import Any, Callable

log = logging.getLogger(__name__)

Step = Callable[[], Any]  # returns None, or an awaitable that is awaited


@dataclass(frozen=True)
class Part:
    name: str
    start: Step | None = None
    stop: Step | None = None


async def _call(step: Step) -> None:
    result = step()
    if inspect.isawaitable(result):
        await result


class Runtime:
    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.caches: dict[str, Callable[[], None]] = {}
        self._started: list[Part] = []
        self._loop: asyncio.AbstractEventLoop | None = None

    def add(self, *parts: Part) -> None:
        """Adds parts after those added before: they start in this order and stop in reverse."""
        names = {part.name for part in self.parts}
        for part in parts:
            if part.name in names:
                raise ValueError(f"The runtime has a part named {part.name!r} already")
            names.add(part.name)
            self.parts.append(part)

    def cache_register(self, name: str, clear: Callable[[], None]) -> None:
        """`clear()` empties the cache `name`; called when the runtime stops."""
        self.caches[name] = clear

    def running(self) -> bool:
        """True on the event loop this runtime was started on, from the start of `start` to the end of
        `stop`: its parts are then its own to start and stop, and nothing else starts one (a part
        stopped at the process's shutdown is not started again by a straggler)."""
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return False
        return self._loop is loop

    @property
    def started(self) -> list[str]:
        """The names of the parts started, in the order they started."""
        return [part.name for part in self._started]

    async def start(self) -> None:
        """Starts every part on the running loop, in order; does nothing when it runs on this loop
        already. Raises what a part's start raised, once the parts started before it are stopped."""
        loop = asyncio.get_running_loop()
        if self._loop is loop:
            return
        if self._loop is not None and not self._loop.is_closed():
            raise RuntimeError("The process runtime runs on another event loop: stop it there first")
        self._loop, self._started = loop, []
        for part in self.parts:
            try:
                if part.start is not None:
                    await _call(part.start)
            except BaseException:
                log.error("Starting the process runtime failed at %s; stopping what started", part.name)
                await self.stop()
                raise
            self._started.append(part)

    async def stop(self) -> None:
        """Stops the started parts in reverse, then empties the caches. Each part is stopped even if
        another failed; a failure is logged, not raised."""
        loop = asyncio.get_running_loop()
        if self._loop is None:
            return
        if self._loop is not loop and not self._loop.is_closed():
            raise RuntimeError("The process runtime runs on another event loop: stop it there")
        try:
            while self._started:
                part = self._started.pop()
                if part.stop is None:
                    continue
                try:
                    await _call(part.stop)
                except Exception:  # noqa: BLE001 - the other parts stop all the same
                    log.warning("Stopping %s failed", part.name, exc_info=True)
        finally:
            self._loop = None
            self.caches_clear()

    def caches_clear(self) -> None:
        for name, clear in list(self.caches.items()):
            try:
                clear()
            except Exception:  # noqa: BLE001 - a cache left full is only memory
                log.warning("Emptying the cache %s failed", name, exc_info=True)


# The process's one runtime: tambo_project/runtime.py adds the server's parts to it.
process_runtime = Runtime()
