"""Django's ASGI handler, less a thread per request where none is needed
(docs/performance.md#bursts-of-starts-issue-40).

Django's handler ends every request with `await sync_to_async(response.close)()`: a thread-sensitive
call, so it runs on the request's own thread (asgiref's ThreadSensitiveContext), which is started for
it when no synchronous code of the request ran before, and then joined by another thread started
when the request ends. Two threads per request, for a close that has nothing to do on a thread:

- `response.close()` runs the response's resource closers and sends `request_finished`, whose
  receivers (Django's `close_old_connections`, `reset_urlconf`, the caches' close) look after what
  the request's code opened on the thread it ran on;
- a request whose code is all async (the run routes, the gateway: their database work goes through
  core/db.py's own threads, which give their connections back after each call) ran nothing on a
  thread of its own, so there is nothing on one to close.

So the close runs on the event loop when no synchronous code of the request ran on a thread of its
own (no executor in its ThreadSensitiveContext) and the response holds nothing synchronous to close
(a file, a synchronous iterator); otherwise it runs on the request's thread, as Django does, which is
where a synchronous view (the DRF API, the admin, the page) left its database connections.
`request_finished` is sent once per request either way. On the loop it is sent synchronously, which
suits its receivers (Django's three, all synchronous); an async receiver connected to it would need
the close to go back to `sync_to_async` (Django's `Signal.send` cannot run one inside the loop).

`handle` is Django 5.2's, with that one step changed (tests/test_asgi_handler.py fails when
Django's own changes, so that the copy is looked at again).
"""
from __future__ import annotations

import asyncio

from asgiref.sync import SyncToAsync, sync_to_async
from django.core import signals
from django.core.exceptions import RequestAborted
from django.core.handlers import asgi
from django.http import FileResponse, HttpResponseBase
from django.urls import set_script_prefix


def closes_on_the_loop(response: HttpResponseBase) -> bool:
    """Whether closing `response` needs no thread: no synchronous code of this request ran on a
    thread of its own, and the response holds no file or synchronous iterator."""
    context = SyncToAsync.thread_sensitive_context.get(None)
    if context is not None and context in SyncToAsync.context_to_thread_executor:
        return False
    if isinstance(response, FileResponse):
        return False
    return not (response.streaming and not response.is_async)


class ASGIHandler(asgi.ASGIHandler):
    async def close_response(self, response: HttpResponseBase) -> None:
        if closes_on_the_loop(response):
            response.close()
        else:
            await sync_to_async(response.close)()

    async def handle(self, scope, receive, send):
        """Django's `ASGIHandler.handle` (5.2), closing the response through `close_response`."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        set_script_prefix(asgi.get_script_prefix(scope))
        await signals.request_started.asend(sender=self.__class__, scope=scope)
        request, error_response = self.create_request(scope, body_file)
        if request is None:
            body_file.close()
            await self.send_response(error_response, send)
            await self.close_response(error_response)
            return

        async def process_request(request, send):
            response = await self.run_get_response(request)
            try:
                await self.send_response(response, send)
            except asyncio.CancelledError:
                pass  # the client disconnected during send_response
            return response

        # Watch for a disconnect while the response is made; listen_for_disconnect goes first, as
        # it raises nothing unexpected that would keep process_request from being cancelled.
        tasks = [
            asyncio.create_task(self.listen_for_disconnect(receive)),
            asyncio.create_task(process_request(request, send)),
        ]
        await asyncio.wait(tasks, return_when=asyncio.FIRST_COMPLETED)
        for task in tasks:
            if task.done():
                try:
                    task.result()
                except RequestAborted:
                    pass
                except AssertionError:
                    body_file.close()
                    raise
            else:
                task.cancel()  # views may handle their cancellation
                try:
                    await task
                except asyncio.CancelledError:
                    pass

        try:
            response = tasks[1].result()
        except asyncio.CancelledError:
            await signals.request_finished.asend(sender=self.__class__)
        else:
            await self.close_response(response)

        body_file.close()
