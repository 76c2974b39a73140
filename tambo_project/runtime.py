"""This server's process runtime: what a serving process runs beside its requests, in the order it
starts. The parts stop in reverse (core/runtime.py); the ASGI lifespan (tambo_project/lifespan.py)
starts them at `lifespan.startup` and stops them at `lifespan.shutdown`, once every connection closed.

| part | starts | stops |
|---|---|---|
| metrics port | forgets the dead processes' gauges, serves METRICS_PORT | its server |
| model clients | on demand (providers/) | their pooled connections closed |
| MCP sessions | the MCP SDK imported in the background | the kept sessions (a stdio server's process exits) |
| memory extractions | on demand, after a run (memory/extraction.py) | a few seconds to end, then cancelled |
| retention job | every RETENTION_INTERVAL_SECONDS (retention/jobs.py) | cancelled |
| run watcher | leases (on a thread of their own: runs/renewal.py), cancels, checkpoints, sweeps, takeovers (runs/control.py) | cancelled, then the renewal |
| event-log writer | the runs' events written to the log (runs/stream/feeds.py) | after a last write |
| followers | on demand, by a reader of a run streamed elsewhere (runs/stream/follow.py) | the LISTEN connection |
| live thread streams | on demand (runs/stream/thread_watch.py) | a refresh under way |
| runs | (the stop signals call `runs_drain`: tambo_project/lifespan.py) | drained, hand-overs finished |

So a process that stops first hands over or ends every run it streams (docs/operations.md#takeover)
and waits for the hand-overs, then stops reading runs streamed elsewhere, writes the last events to
the log, and only then stops the watcher and its lease renewal, which renews the leases of the runs
until their events are written; the model clients and MCP sessions close after everything that used them, the memory
extractions among them. Then the caches registered with the runtime are emptied.

Not parts: a run's end retried after a database failure (runs/recovery/settle.py) ends with the
process, and the expiry sweep of another records it; tracing is set up by `telemetry` when Django
starts (every process, the management commands too) and its exporter flushes at exit.
"""
from __future__ import annotations

import asyncio
import importlib
import logging
import sys
import threading
import time

from core.runtime import Part, Runtime, process_runtime
from memory.extraction import extractions
from providers import providers_close
from retention.jobs import housekeeper
from runs.control import watcher
from runs.stream.feeds import flusher
from runs.stream.follow import follower
from runs.stream.thread_watch import thread_watch
from telemetry import metrics

log = logging.getLogger(__name__)


class MetricsPort:
    def __init__(self) -> None:
        self.server = None

    def start(self) -> None:
        metrics.forget_dead_processes()  # a replaced worker's open streams are not open any more
        self.server = metrics.serve_metrics_port()

    async def stop(self) -> None:
        server, self.server = self.server, None
        if server is not None:
            await asyncio.to_thread(server.shutdown)  # waits for the server's next poll (half a second)
            server.server_close()


# The MCP SDK costs about a second of import: imported in the background once the process starts (see
# tambo_project/asgi.py), so a process is ready sooner and only a run using MCP in its first second waits.
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


def _mcp_preload() -> None:
    threading.Thread(target=_preload, name="preload", daemon=True).start()


async def _mcp_sessions_close() -> None:
    # A process that never imported the sessions module has no kept session to close.
    sessions = sys.modules.get("tools.mcp_sessions")
    if sessions is not None:
        await sessions.sessions_close()


def runs_drain() -> None:
    """Hands over or ends every run this process streams (runs/control.py `Watcher.drain`)."""
    told = watcher.drain()
    if told:
        log.info("Shutting down: handing %d streaming run(s) over or ending them with a retryable RUN_ERROR", told)


async def _runs_stop() -> None:
    runs_drain()  # runs started between the stop signal and the last connection closing
    await watcher.hand_over_wait()


metrics_port = MetricsPort()

SERVER_PARTS = (
    Part("metrics port", start=metrics_port.start, stop=metrics_port.stop),
    Part("model clients", stop=providers_close),
    Part("MCP sessions", start=_mcp_preload, stop=_mcp_sessions_close),
    Part("memory extractions", stop=extractions.stop),
    Part("retention job", start=housekeeper.start, stop=housekeeper.stop),
    Part("run watcher", start=watcher.start, stop=watcher.stop),
    Part("event-log writer", start=flusher.ensure_started, stop=flusher.stop),
    Part("followers", stop=follower.stop),
    Part("live thread streams", stop=thread_watch.stop),
    Part("runs", stop=_runs_stop),
)


def server_runtime() -> Runtime:
    """The process runtime with this server's parts (added the first time)."""
    if not process_runtime.parts:
        process_runtime.add(*SERVER_PARTS)
    return process_runtime
