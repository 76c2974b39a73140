"""Static files (the page's JS and CSS, the admin's, the API docs' bundles) served by WhiteNoise at the ASGI edge.

WhiteNoise's Django middleware is synchronous only: in this async middleware stack Django would run
every request, a streaming run included, through a thread to call it. So this ASGI wrapper answers
`/static/` itself with WhiteNoise's file index and responder (content negotiation for the compressed
copies, ETag and Range handling, cache headers) and hands every other request to Django untouched.

What is served depends on settings (see STATIC_COLLECTED there): collected, compressed files with
content-hashed names that browsers may cache for ever (`tambo-server serve`), or the source folders
looked up on every request (bin/serve, the tests).
"""
from __future__ import annotations

import asyncio

from django.conf import settings
from whitenoise.middleware import WhiteNoiseMiddleware
from whitenoise.storage import CompressedManifestStaticFilesStorage

CHUNK_BYTES = 256 * 1024


class CollectedStaticStorage(CompressedManifestStaticFilesStorage):
    """collectstatic's storage under STATIC_COLLECTED: compressed copies with content-hashed names.

    The vendored bundles (static/vendor) name source maps that are not shipped; rewriting those
    comments would fail the whole collection, so they are left as they are (a browser's developer
    tools then find no map, which is all that is lost).
    """

    patterns = tuple((glob, tuple(p for p in rules if "sourceMappingURL" not in str(p)))
                     for glob, rules in CompressedManifestStaticFilesStorage.patterns)


class _WhiteNoiseSettings:
    """Django's settings, less STATIC_ROOT when nothing was collected (WhiteNoise would warn it is missing)."""

    def __getattr__(self, name):
        if name == "STATIC_ROOT" and not settings.STATIC_COLLECTED:
            return None
        return getattr(settings, name)


class StaticFiles:
    def __init__(self, app):
        self.app = app
        self.whitenoise = WhiteNoiseMiddleware(settings=_WhiteNoiseSettings())

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or not scope["path"].startswith(self.whitenoise.static_prefix):
            return await self.app(scope, receive, send)
        if self.whitenoise.autorefresh:
            static_file = self.whitenoise.find_file(scope["path"])
        else:
            static_file = self.whitenoise.files.get(scope["path"])
        if static_file is None:
            return await self.app(scope, receive, send)
        # WhiteNoise reads request headers in their WSGI spelling (HTTP_ACCEPT_ENCODING, HTTP_RANGE …).
        headers = {"HTTP_" + name.decode("latin-1").upper().replace("-", "_"): value.decode("latin-1")
                   for name, value in scope["headers"]}
        response = static_file.get_response(scope["method"], headers)
        await send({"type": "http.response.start", "status": int(response.status),
                    "headers": [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]})
        if response.file is None:
            return await send({"type": "http.response.body", "body": b""})
        try:
            while chunk := await asyncio.to_thread(response.file.read, CHUNK_BYTES):
                await send({"type": "http.response.body", "body": chunk, "more_body": True})
            await send({"type": "http.response.body", "body": b""})
        finally:
            response.file.close()
