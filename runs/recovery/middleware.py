"""Starts this process's run watcher (runs/control.py) with the first request it serves, where no
process runtime runs on the loop (core/runtime.py: an in-process test client, uvicorn with
`--lifespan off`); a served process's lifespan started it already.

The watcher records the threads whose lease expired, whichever process held them (docs/protocol.md#after-a-crash),
so it must run in every serving process, not only in those that happen to stream a run.
"""
from __future__ import annotations

from asgiref.sync import iscoroutinefunction, markcoroutinefunction

from core.runtime import process_runtime
from runs.control import watcher


class RunWatcherMiddleware:
    sync_capable = True
    async_capable = True

    def __init__(self, get_response):
        self.get_response = get_response
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    def __call__(self, request):
        if not self._async:
            # Under WSGI (the admin's runserver, tests' sync client) there is no loop to run it on.
            return self.get_response(request)
        return self._acall(request)

    async def _acall(self, request):
        if not process_runtime.running():
            watcher.ensure_started()
        return await self.get_response(request)
