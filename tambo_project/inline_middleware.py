"""Django's stock middleware, run on the event loop for async requests.

Under ASGI, Django's `MiddlewareMixin` runs every `process_request` and `process_response` of an
old-style middleware through `sync_to_async(thread_sensitive=True)`: a dozen thread hops per
request, and a thread started per request to serve them (kept while a stream is open). These
methods are pure header and cookie bookkeeping, except where a session or messages must be
written (a database write): those cases alone still go to the request's thread. The results are
the same; the run endpoints just skip the hops. Synchronous (WSGI) use is unchanged.

Each class stays a subclass of Django's (the admin's checks look for those in MIDDLEWARE) and
overrides only public parts: `__call__`, which picks the path, and the `process_*` hooks. Django's
private async dispatch (`MiddlewareMixin.__acall__`) is neither overridden nor called.
"""
from __future__ import annotations

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.conf import settings
from django.contrib.auth.middleware import AuthenticationMiddleware as _Authentication
from django.contrib.messages.middleware import MessageMiddleware as _Message
from django.contrib.sessions.middleware import SessionMiddleware as _Session
from django.middleware.clickjacking import XFrameOptionsMiddleware as _XFrameOptions
from django.middleware.common import CommonMiddleware as _Common
from django.middleware.csrf import CsrfViewMiddleware as _CsrfView
from django.middleware.security import SecurityMiddleware as _Security


class _Inline:
    def __call__(self, request):
        # Django's handler awaits what an async-capable middleware returns when its next step is
        # async (MiddlewareMixin marks the instance a coroutine function for that).
        if iscoroutinefunction(self.get_response):
            return self._inline_call(request)
        return super().__call__(request)

    async def _inline_call(self, request):
        response = None
        if hasattr(self, "process_request"):
            response = self.process_request(request)
        response = response or await self.get_response(request)
        if hasattr(self, "process_response"):
            if self.response_writes(request):
                response = await sync_to_async(self.process_response, thread_sensitive=True)(request, response)
            else:
                response = self.process_response(request, response)
        return response

    def response_writes(self, request) -> bool:
        """Whether process_response may touch the database for this request."""
        return False


class SecurityMiddleware(_Inline, _Security):
    pass


class SessionMiddleware(_Inline, _Session):
    def response_writes(self, request) -> bool:
        session = getattr(request, "session", None)
        return session is not None and (session.modified or settings.SESSION_SAVE_EVERY_REQUEST)


class CommonMiddleware(_Inline, _Common):
    pass


class CsrfViewMiddleware(_Inline, _CsrfView):
    # A coroutine, so the async handler calls it on the loop (WSGI wraps it in async_to_sync). It
    # reads the secret from the cookie; from the session (a database read) only with
    # CSRF_USE_SESSIONS, which this project does not set.
    async def process_view(self, request, callback, callback_args, callback_kwargs):
        return super().process_view(request, callback, callback_args, callback_kwargs)


class AuthenticationMiddleware(_Inline, _Authentication):
    pass


class MessageMiddleware(_Inline, _Message):
    def response_writes(self, request) -> bool:
        storage = getattr(request, "_messages", None)
        return storage is not None and (storage.used or storage.added_new)


class XFrameOptionsMiddleware(_Inline, _XFrameOptions):
    pass
