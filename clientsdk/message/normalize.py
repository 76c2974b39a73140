"""Turn whatever a provider or tool returned into one synchronous iterator."""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import threading
from collections.abc import Iterable, Iterator, Mapping
from typing import Any

from .abort import AbortError, on_abort, raise_if_aborted


def iterate_result(value: Any, abort_signal: threading.Event | None = None) -> Iterator[Any]:
    """Yield the items of a provider/tool result, whatever its kind.

    A mapping, `str` or `bytes` is one item; `None` is no item; any other
    iterable (a generator, a list) yields its items; an awaitable is awaited
    and its result normalised again; an async iterable is drained. Async values
    run on a private event loop in the calling thread, so this must not be
    called from a thread that is already running an event loop. Waiting on an
    async value stops with `AbortError` as soon as `abort_signal` is set; a
    synchronous iterator is only checked between items. Iterators are closed
    when the caller stops early.
    """
    if inspect.isawaitable(value) or hasattr(value, "__aiter__"):
        yield from _iterate_async(value, abort_signal)
    elif value is None:
        return
    elif isinstance(value, (Mapping, str, bytes)):
        yield value
    elif isinstance(value, Iterable):
        iterator = iter(value)
        try:
            for item in iterator:
                raise_if_aborted(abort_signal)
                yield item
        finally:
            close = getattr(iterator, "close", None)
            if close is not None:
                close()
    else:
        yield value


def _iterate_async(value: Any, abort_signal: threading.Event | None) -> Iterator[Any]:
    loop = asyncio.new_event_loop()
    try:
        if not hasattr(value, "__aiter__"):
            value = _run(loop, value, abort_signal)
            if not hasattr(value, "__aiter__"):
                yield from iterate_result(value, abort_signal)
                return
        iterator = value.__aiter__()
        try:
            while True:
                try:
                    item = _run(loop, iterator.__anext__(), abort_signal)
                except StopAsyncIteration:
                    return
                yield item
        finally:
            aclose = getattr(iterator, "aclose", None)
            if aclose is not None:
                with contextlib.suppress(Exception):
                    loop.run_until_complete(aclose())
    finally:
        loop.close()


def _run(loop: asyncio.AbstractEventLoop, awaitable: Any, abort_signal: threading.Event | None) -> Any:
    """Run one awaitable to completion on `loop`, or raise `AbortError` on abort."""

    async def race() -> Any:
        task = asyncio.ensure_future(awaitable)
        if abort_signal is None:
            return await task
        raise_if_aborted(abort_signal)
        aborted = loop.create_future()

        def wake() -> None:
            # The abort may land after this loop closed; nothing is waiting then.
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(lambda: aborted.done() or aborted.set_result(None))

        cancel = on_abort(abort_signal, wake)
        try:
            await asyncio.wait({task, aborted}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            cancel()
        if task.done():
            return task.result()
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await task
        raise AbortError()

    return loop.run_until_complete(race())


def resolve(value: Any, abort_signal: threading.Event | None = None) -> Any:
    """Return `value`, or its result if it is awaitable (run as in `iterate_result`)."""
    if not inspect.isawaitable(value):
        return value
    loop = asyncio.new_event_loop()
    try:
        return _run(loop, value, abort_signal)
    finally:
        loop.close()
