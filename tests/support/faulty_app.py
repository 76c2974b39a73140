"""The real ASGI app with one fault injected after a run takes its lock (test-only; never imported by
the server itself). A uvicorn subprocess serves `tests.support.faulty_app:application` with
`TAMBO_TEST_FAULT` set to one of:

- `encode`: encoding a run's second TEXT_MESSAGE_CONTENT event raises;
- `write`: the server's third write of a streaming body raises (the socket failing under the run);
- `store`: the first attempt to store each run's step raises (the database refusing the write);
- `start_stall`: a /v1 run's start, once it took the lock and committed, waits `TAMBO_TEST_STALL`
  seconds before it returns to the event loop (a busy loop or worker pool between the two).

Each fault is injected by replacing one function of the running app, so the server code stays free of
test hooks.
"""
from __future__ import annotations

import os
import time

from tambo_project.asgi import application as real_application  # sets up Django first

import runs.stream.guard  # noqa: E402
import runs.views  # noqa: E402
from runs import services  # noqa: E402

FAULT = os.environ.get("TAMBO_TEST_FAULT", "")


class InjectedFault(RuntimeError):
    pass


def _failing_encoder():
    real = runs.stream.guard.encode_event
    seen: dict[str, int] = {}

    def encode(event):
        if event.type == "TEXT_MESSAGE_CONTENT":
            seen[event.message_id] = seen.get(event.message_id, 0) + 1
            if seen[event.message_id] == 2:
                raise InjectedFault("injected: encoding failed")
        return real(event)

    return encode


def _failing_store():
    real = services.step_store
    failed: set[str] = set()

    def step_store(**kwargs):
        run_id = kwargs["run"].id
        if run_id not in failed:
            failed.add(run_id)
            raise InjectedFault("injected: storing the step failed")
        return real(**kwargs)

    return step_store


def _stalled_start():
    real = runs.views.run_start_request
    stall = float(os.environ.get("TAMBO_TEST_STALL", "5"))

    def run_start_request(**kwargs):
        started = real(**kwargs)
        time.sleep(stall)  # on the database worker thread, after the start's transaction committed
        return started

    return run_start_request


def _failing_writes(app):
    async def wrapped(scope, receive, send):
        if scope["type"] != "http" or "/runs" not in scope.get("path", ""):
            return await app(scope, receive, send)
        writes = 0

        async def failing_send(message):
            nonlocal writes
            if message["type"] == "http.response.body" and message.get("more_body"):
                writes += 1
                if writes == 3:
                    raise OSError("injected: writing to the socket failed")
            await send(message)

        return await app(scope, receive, failing_send)

    return wrapped


application = real_application
if FAULT == "encode":
    runs.stream.guard.encode_event = _failing_encoder()
elif FAULT == "store":
    services.step_store = _failing_store()
elif FAULT == "start_stall":
    runs.views.run_start_request = _stalled_start()
elif FAULT == "write":
    application = _failing_writes(real_application)
else:
    raise RuntimeError(f"TAMBO_TEST_FAULT must be encode, write, store or start_stall, not {FAULT!r}")
