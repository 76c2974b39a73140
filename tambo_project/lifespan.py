"""The ASGI lifespan: what a serving process does when it starts and when it stops.

Django's ASGI handler answers HTTP only (uvicorn would log that the lifespan protocol is unsupported),
so this wrapper answers the lifespan messages and passes everything else on. What the process runs
beside its requests is its runtime (tambo_project/runtime.py lists the parts in order): started at
`lifespan.startup` (a part that fails to start fails the start-up, and the process does not serve),
stopped in reverse at `lifespan.shutdown`.

Stopping happens in two steps, because uvicorn sends `lifespan.shutdown` only once every open
connection has closed (or its graceful-shutdown timeout has cut them):

1. On SIGTERM or SIGINT (the signal uvicorn stops on, chained here at start-up) every run this process
   streams is stopped at once. One another process can go on with is handed over (its model stream
   stopped, its text checkpointed, its events logged, its lease given up: docs/operations.md#takeover):
   its stream here closes without a terminal event, and its clients resume reading it from any
   process. Any other run ends with a retryable RUN_ERROR (`SERVER_SHUTTING_DOWN`), its partial
   message stored and its lock released, so the client can run it again.
2. On `lifespan.shutdown`: the runtime stops, runs first (those started since the signal drained, the
   hand-overs finished), then the followers of runs streaming elsewhere, the event-log writer (after a
   last write), the run watcher, the retention job, the memory extractions (a few seconds to end:
   docs/memory.md), the kept MCP sessions (a stdio server's process exits), the model clients and the
   metrics port.
"""
from __future__ import annotations

import asyncio
import logging
import signal

from tambo_project.runtime import runs_drain, server_runtime

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
                try:
                    await server_runtime().start()
                except Exception as exc:  # noqa: BLE001 - answered: the server then exits
                    log.exception("The process runtime did not start")
                    await send({"type": "lifespan.startup.failed",
                                "message": f"The process runtime did not start: {exc}"})
                    return
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                await server_runtime().stop()
                await send({"type": "lifespan.shutdown.complete"})
                return
