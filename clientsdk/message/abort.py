"""Cross-thread abort signalling for the message engine.

`abort_request()` is called from a UI or control thread while `send_message()`
blocks in another one, so cancellation is a `threading.Event` that can also run
callbacks: a blocked socket read cannot poll an event, but a callback can shut
the socket down and wake it.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable

from ..errors import AbortError

__all__ = ["AbortError", "AbortSignal", "on_abort", "raise_if_aborted"]

logger = logging.getLogger(__name__)


class AbortSignal(threading.Event):
    """A `threading.Event` that is set once, on abort, and then runs listeners.

    It is a real Event, so code written for a plain `threading.Event`
    (`is_set()`, `wait()`) works with it unchanged.
    """

    def __init__(self) -> None:
        super().__init__()
        self._listeners: list[Callable[[], None]] = []
        self._listeners_lock = threading.Lock()

    @property
    def aborted(self) -> bool:
        return self.is_set()

    def abort(self) -> None:
        """Set the signal and run every listener once, in the calling thread."""
        self.set()

    def set(self) -> None:
        with self._listeners_lock:
            if self.is_set():
                return
            super().set()
            listeners, self._listeners = self._listeners, []
        for listener in listeners:
            try:
                listener()
            except Exception:  # a broken listener must not stop the others
                logger.exception("abort listener failed")

    def add_listener(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Run `callback` on abort (at once if already aborted); returns a remover."""
        with self._listeners_lock:
            if not self.is_set():
                self._listeners.append(callback)
                return lambda: self._remove(callback)
        callback()
        return lambda: None

    def _remove(self, callback: Callable[[], None]) -> None:
        with self._listeners_lock:
            if callback in self._listeners:
                self._listeners.remove(callback)

    def raise_if_aborted(self) -> None:
        if self.is_set():
            raise AbortError()


def raise_if_aborted(signal: threading.Event | None) -> None:
    """Raise `AbortError` if `signal` (any Event, or None) is set."""
    if signal is not None and signal.is_set():
        raise AbortError()


def on_abort(signal: threading.Event | None, callback: Callable[[], None]) -> Callable[[], None]:
    """Call `callback` once when `signal` is set; returns a function that cancels it.

    An `AbortSignal` notifies directly. A plain `threading.Event` has no
    callbacks, so a daemon thread polls it until cancelled; that keeps plain
    Events usable at the cost of up to 50 ms latency.
    """
    if signal is None:
        return lambda: None
    if isinstance(signal, AbortSignal):
        return signal.add_listener(callback)
    cancelled = threading.Event()

    def watch() -> None:
        while not cancelled.is_set():
            if signal.wait(0.05):
                if not cancelled.is_set():
                    callback()
                return

    threading.Thread(target=watch, name="abort-watch", daemon=True).start()
    return cancelled.set
