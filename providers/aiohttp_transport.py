"""The model's HTTP transport: aiohttp (its C parser) under both SDKs' `httpx2` clients.

Why: reading a fast model's stream through httpx2/httpcore/h11 was a third of the server's CPU while
streaming (h11 spends about 21 µs on one chunk of a chunked body); aiohttp parses the same in C and
hands over whatever has arrived as one block, so a fast stream is read a batch of events at a time
(docs/performance.md, "The model's stream"). The SDKs still build the request, send it through
their `httpx2.AsyncClient` and map statuses; only the transport under that client changes.

What the rest of the code relies on is kept (providers/openai_provider.py `sdk_model_error`):

- **Errors** are httpx2's, as httpcore raises them, so both SDKs raise the same classes: a refused
  connection is a `ConnectError` (the SDK's APIConnectionError, "could not be reached"), never a
  timeout; a stalled read a `ReadTimeout`; a connection cut mid-body a transport error. (The SDKs'
  own aiohttp adapter maps every `ClientConnectionError`, refusals included, to `ConnectTimeout`.)
- **A pooled connection the server has closed** is not trusted: idle connections are kept
  KEEPALIVE_SECONDS, shorter than the common servers' 5 s (uvicorn, Node), and a request whose
  *reused* connection turns out closed before the first byte of an answer (the server's idle timer
  fired as the request left) is sent once more on a new connection. Nothing of an answer was read,
  so nothing was shown; a fresh connection's failure is never retried.
- **Closing a response mid-body drops its connection** (a stopped run aborts the model's answer);
  a response read to its end returns the connection to the pool.

The transport is put in by `AiohttpClient` (`_init_transport` replaced, as the SDKs' own aiohttp
client does): passing `transport=` instead would make httpx2 ignore the proxies named in the
environment; this way they keep httpx2's own proxy transport.
This module does not import Django.
"""
from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any, AsyncIterator

import aiohttp
import httpx2

# Below the 5 s keep-alive of uvicorn (vLLM, most Python model servers) and Node: the client drops
# an idle connection before the server would.
KEEPALIVE_SECONDS = 4.0
MAX_CONNECTIONS = 100

# aiohttp's errors → httpx2's, most specific first (the first match wins).
_ERRORS: tuple[tuple[type[BaseException], type[httpx2.TransportError]], ...] = (
    (aiohttp.ConnectionTimeoutError, httpx2.ConnectTimeout),
    (aiohttp.ServerTimeoutError, httpx2.ReadTimeout),  # SocketTimeoutError: no byte for sock_read seconds
    (aiohttp.ClientProxyConnectionError, httpx2.ProxyError),
    (aiohttp.ClientHttpProxyError, httpx2.ProxyError),
    (aiohttp.ClientConnectorError, httpx2.ConnectError),  # refused, DNS, TLS handshake
    (aiohttp.ServerDisconnectedError, httpx2.RemoteProtocolError),
    (aiohttp.ClientPayloadError, httpx2.RemoteProtocolError),  # a body cut short or badly framed
    (aiohttp.ClientResponseError, httpx2.RemoteProtocolError),  # an answer that is not HTTP
    (aiohttp.InvalidURL, httpx2.UnsupportedProtocol),
    (aiohttp.ClientError, httpx2.ReadError),  # reset, and the rest
    (OSError, httpx2.ReadError),
    (asyncio.TimeoutError, httpx2.ReadTimeout),
)


def transport_error(exc: BaseException) -> httpx2.TransportError | None:
    """The httpx2 error to raise for an aiohttp (or socket) error, None for anything else."""
    for source, target in _ERRORS:
        if isinstance(exc, source):
            return target(str(exc) or type(exc).__name__)
    return None


def _stale(exc: BaseException) -> bool:
    """Whether a failure before any answer is what a closed keep-alive connection gives."""
    return isinstance(exc, (aiohttp.ServerDisconnectedError, aiohttp.ClientOSError)) and not isinstance(
        exc, aiohttp.ClientConnectorError)


async def _mark_reused(session: aiohttp.ClientSession, context: SimpleNamespace, params: object) -> None:
    context.trace_request_ctx.reused = True


class _Body(httpx2.AsyncByteStream):
    """The answer's body as aiohttp receives it: each read is everything that has arrived."""

    def __init__(self, response: aiohttp.ClientResponse) -> None:
        self._response = response

    async def __aiter__(self) -> AsyncIterator[bytes]:
        content = self._response.content
        try:
            while True:
                block = await content.readany()
                if not block:
                    return
                yield block
        except Exception as exc:
            mapped = transport_error(exc)
            if mapped is None:
                raise
            raise mapped from exc

    async def aclose(self) -> None:
        # Read to its end: the connection goes back to the pool; otherwise it is dropped, which is
        # how a stopped run aborts the model's answer at once.
        if self._response.content.is_eof():
            self._response.release()
        else:
            self._response.close()


class AiohttpTransport(httpx2.AsyncBaseTransport):
    """An httpx2 transport over one aiohttp session, made on the running loop at the first request."""

    def __init__(self, *, keepalive: float = KEEPALIVE_SECONDS, limit: int = MAX_CONNECTIONS,
                 ssl_context: Any = None) -> None:
        self._keepalive = keepalive
        self._limit = limit
        self._ssl = ssl_context
        self._session: aiohttp.ClientSession | None = None

    def _open(self) -> aiohttp.ClientSession:
        trace = aiohttp.TraceConfig(trace_config_ctx_factory=SimpleNamespace)
        trace.on_connection_reuseconn.append(_mark_reused)
        connector = aiohttp.TCPConnector(limit=self._limit, keepalive_timeout=self._keepalive,
                                         ssl=self._ssl if self._ssl is not None else httpx2.create_ssl_context())
        # No cookies kept between requests, no decompression here (httpx2 decodes the body).
        return aiohttp.ClientSession(connector=connector, trace_configs=[trace], auto_decompress=False,
                                     cookie_jar=aiohttp.DummyCookieJar())

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        if self._session is None or self._session.closed:
            self._session = self._open()
        timeouts = request.extensions.get("timeout", {})
        try:
            body: bytes | httpx2.AsyncByteStream | None = request.content or None
        except httpx2.RequestNotRead:
            body = request.stream  # type: ignore[assignment]
        headers = [(k, v) for k, v in request.headers.multi_items() if k.lower() != "transfer-encoding"]
        retry = isinstance(body, bytes) or body is None  # a body that can be sent again
        while True:
            sent = SimpleNamespace(reused=False)
            try:
                response = await self._session.request(
                    request.method, str(request.url), headers=headers, data=body, allow_redirects=False,
                    compress=False, trace_request_ctx=sent,
                    timeout=aiohttp.ClientTimeout(total=None, connect=timeouts.get("pool"),
                                                  sock_connect=timeouts.get("connect"),
                                                  sock_read=timeouts.get("read")),
                    server_hostname=request.extensions.get("sni_hostname"))
            except Exception as exc:
                if retry and sent.reused and _stale(exc):
                    # The dead connection is closed now; each pooled one is tried at most once, so
                    # this ends on a new connection at the latest (whose failure is final).
                    continue
                mapped = transport_error(exc)
                if mapped is None:
                    raise
                raise mapped from exc
            break
        extensions = {"http_version": b"HTTP/1.1"}
        if response.reason:
            extensions["reason_phrase"] = response.reason.encode()
        return httpx2.Response(status_code=response.status, headers=response.raw_headers, stream=_Body(response),
                               request=request, extensions=extensions)

    async def aclose(self) -> None:
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    def __del__(self) -> None:
        # A client is made per event loop (providers/vendor_client.py) and one of a loop that has
        # ended (async_to_sync, asyncio.run) is never closed: its session goes with it, quietly
        # (aiohttp logs an error for every session collected open). Its sockets are closed here.
        session = self._session
        if session is not None and not session.closed:
            connector = session.connector
            session.detach()
            try:
                connector._close()  # the synchronous part of `close()`; no loop to await on
            except Exception:  # noqa: BLE001 - collected: nothing to report to
                pass



class AiohttpClient(httpx2.AsyncClient):
    """An httpx2 client reading through AiohttpTransport, with its TLS settings (`verify`, `cert`); the
    proxies named in the environment keep httpx2's own transport. Made here rather than from an SDK's
    `DefaultAsyncHttpxClient`: Anthropic's passes a transport of its own, which would win."""

    def _init_transport(self, verify: Any = True, cert: Any = None, trust_env: bool = True, http1: bool = True,
                        http2: bool = False, limits: Any = None,
                        transport: httpx2.AsyncBaseTransport | None = None) -> httpx2.AsyncBaseTransport:
        if transport is not None:
            return transport
        return AiohttpTransport(ssl_context=httpx2.create_ssl_context(verify=verify, cert=cert, trust_env=trust_env))
