"""What every vendor provider shares: its endpoint, and one SDK client per event loop.

A client's pooled connections belong to the loop that opened them, and Django may run async code on
more than one loop (async_to_sync starts fresh ones), so each loop gets a client of its own. Retries
are the caller's decision (it knows whether output was already shown), so a subclass makes its
client with the SDK's own retries off. Both SDKs' clients read through aiohttp
(providers/aiohttp_transport.py): `_http_client`. The client's timeout is per read; a call's total is
bounded by its `deadlines` (providers/deadline.py). This module does not import Django.
"""
from __future__ import annotations

import asyncio
import weakref
from typing import Any, AsyncIterator, Callable

from providers.aiohttp_transport import AiohttpClient
from providers.base import ModelError
from providers.deadline import Deadlines, StreamClock


class VendorProvider:
    """Base of the `openai` and `anthropic` providers; a subclass makes its SDK's client."""

    name = "vendor"

    def __init__(self, *, api_key: str, base_url: str | None, default_model: str, timeout: float = 60.0,
                 deadlines: Deadlines = Deadlines()):
        self._api_key = api_key
        self._base_url = base_url
        self.default_model = default_model
        self.timeout = timeout
        self.deadlines = deadlines
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, Any] = weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"{type(self).__name__}(base_url={self._base_url!r}, default_model={self.default_model!r})"

    def _make_client(self) -> Any:
        raise NotImplementedError

    def _http_client(self) -> AiohttpClient:
        """The httpx2 client under either SDK's client: over the aiohttp transport, with the SDKs' own
        defaults (redirects followed; the timeout is sent per request);
        proxies named in the environment keep httpx2's transport."""
        return AiohttpClient(timeout=self.timeout, follow_redirects=True)

    def _client(self) -> Any:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = self._make_client()
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Closes the running loop's client and its pooled connections (at the process's shutdown)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()


async def stream_folded(opening: Any, *, api_error: type[BaseException], to_model_error: Callable[..., Exception],
                        read: Callable[[AsyncIterator[bytes]], AsyncIterator[Any]], fold: Any,
                        deadlines: Deadlines = Deadlines()) -> AsyncIterator[Any]:
    """The body of a vendor provider's `stream`: open the SDK's streaming response (`opening`, its
    `with_streaming_response.create(...)`), read its raw bytes into the vendor's items (`read`: a list
    of chunks or events per read of the body), fold each read's items into deltas (`fold.feed_read(items)`,
    merged as providers/batching.py says; then `fold.end()`, the StepEnd), and close the response
    whatever happens, so closing the generator drops the connection mid-answer. A fast model's
    read holds many items: they cost the layers above one delta, not one each.

    A refusal before the stream began (`api_error`) is raised as `to_model_error(exc, started=False)`,
    the original chained; what goes wrong later is the fold's and the reader's to say, and is marked
    `accepted` (the vendor had the request). Each wait for the vendor ends by `deadlines`
    (providers/deadline.py): the first delta, the gap to the next (counted from when reading resumes,
    so the caller's own time with a delta is not the vendor's), the whole step.
    """
    clock = StreamClock(deadlines)
    timer = asyncio.timeout_at(clock.wait_until())
    try:
        async with timer:
            response = await opening.__aenter__()
    except api_error as exc:
        raise to_model_error(exc, started=False) from exc
    except TimeoutError as exc:
        if not timer.expired():
            raise
        raise clock.error() from exc
    items = read(response.http_response.aiter_bytes())
    try:
        while True:
            timer = asyncio.timeout_at(clock.wait_until())
            try:
                async with timer:
                    batch = await anext(items)
            except StopAsyncIteration:
                break
            except TimeoutError as exc:
                if not timer.expired():
                    raise
                raise clock.error() from exc
            deltas = fold.feed_read(batch)
            for delta in deltas:
                yield delta
            if deltas:
                clock.delivered()
        yield fold.end()
    except ModelError as exc:
        exc.accepted = True
        raise
    finally:
        await items.aclose()
        await opening.__aexit__(None, None, None)
