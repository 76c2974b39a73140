"""The ASGI lifespan: what a serving process does when it starts and when it stops.

Django's ASGI handler answers HTTP only (uvicorn would log that the lifespan protocol is unsupported),
so this wrapper answers the lifespan messages and passes everything else on.

Stopping happens in two steps, because uvicorn sends `lifespan.shutdown` only once every open
connection has closed (or its graceful-shutdown timeout has cut them):

1. On SIGTERM or SIGINT (the signal uvicorn stops on, chained here at start-up) every run this process
   streams is stopped at once. One another process can go on with is handed over (its model stream
   stopped, its text checkpointed, its events logged, its lease given up: docs/operations.md#takeover):
   its stream here closes without a terminal event, and its clients resume reading it from any
   process. Any other run ends with a retryable RUN_ERROR (`SERVER_SHUTTING_DOWN`), its partial
   message stored and its lock released, so the client can run it again.
2. On `lifespan.shutdown`: the hand-overs finish; the run watcher, the event-log writer (after a last write) and the
   followers of runs streaming elsewhere stop; memory extractions still running get a few seconds to
   end (docs/memory.md); the kept MCP sessions close (a stdio server's process
   exits) and so do the model clients.
"""
from __future__ import annotations

import asyncio
import importlib
import logging
import signal
import sys
import threading
import time

from memory.extraction import extractions
from providers import providers_close
from retention.jobs import housekeeper
from runs.control import watcher
from runs.stream.feeds import flusher
from runs.stream.follow import follower

log = logging.getLogger(__name__)

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _chain_stop_signals(loop: asyncio.AbstractEventLoop) -> None:
    """Runs `runs_drain` on the loop when the server is told to stop, then the server's own handler."""
    for sig in STOP_SIGNALS:
        previous = signal.getsignal(sig)

        def handler(signum, frame, previous=previous):
            loop.call_soon_threadsafe(runs_drain)
            if callable(previous):
                previous(signum, frame)

        try:
            signal.signal(sig, handler)
        except ValueError:  # not the main thread (an embedding server): step 2 still runs
            return


def runs_drain() -> None:
    told = watcher.drain()
    if told:
        log.info("Shutting down: handing %d streaming run(s) over or ending them with a retryable RUN_ERROR", told)


async def process_shutdown() -> None:
    """Step 2 above. Each part is stopped even if another fails; nothing here is an error to log."""
    runs_drain()  # runs started between the signal and the last connection closing
    for stop in (watcher.hand_over_wait, watcher.stop, flusher.stop, follower.stop, housekeeper.stop, extractions.stop,
                 _mcp_sessions_close, providers_close):
        try:
            await stop()
        except Exception:  # noqa: BLE001 - the process is ending either way
            log.warning("Shutting down: %s failed", stop.__qualname__, exc_info=True)


# Imported in the background at start-up (see tambo_project/asgi.py): the MCP SDK costs about a second.
PRELOADED_IN_BACKGROUND = ("tools.mcp_client", "tools.mcp_sessions")


def _preload() -> None:
    for name in PRELOADED_IN_BACKGROUND:
        for attempt in range(3):
            try:
                importlib.import_module(name)
                break
            except RuntimeError as exc:
                # A request importing part of the same package at this moment: Python's import locks
                # detect the cycle and fail one side (`_DeadlockError`); the other finishes, so again.
                if "deadlock" not in str(exc) or attempt == 2:
                    log.warning("Preloading %s failed", name, exc_info=True)
                    break
                time.sleep(0.2)
            except Exception:  # noqa: BLE001 - the first run that needs it imports it again and reports the error
                log.warning("Preloading %s failed", name, exc_info=True)
                break


async def _mcp_sessions_close() -> None:
    # A process that never imported the sessions module has no kept session to close.
    sessions = sys.modules.get("tools.mcp_sessions")
    if sessions is not None:
        await sessions.sessions_close()


class Lifespan:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "lifespan":
            return await self.app(scope, receive, send)
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                _chain_stop_signals(asyncio.get_running_loop())
                threading.Thread(target=_preload, name="preload", daemon=True).start()
                housekeeper.start()
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await process_shutdown()
                await send({"type": "lifespan.shutdown.complete"})
                return
