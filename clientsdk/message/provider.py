"""The default response provider: streams chunks from this server's chat-completions gateway."""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator, Mapping
from typing import Any

import requests

from ..errors import (
    AbortError,
    APIConnectionError,
    ChatCompletionsConnectionError,
    ChatCompletionsError,
    ChatCompletionsHTTPError,
    ChatCompletionsStreamError,
)
from ..retry_after import retry_after_seconds
from .abort import on_abort, raise_if_aborted
from .sse import sse_stream_to_generator

# The errors live in the package's one error tree (clientsdk.errors); importable from here too.
__all__ = [
    "ChatCompletionsConnectionError",
    "ChatCompletionsError",
    "ChatCompletionsHTTPError",
    "ChatCompletionsProvider",
    "ChatCompletionsStreamError",
]

DEFAULT_TIMEOUT = 60.0


class ChatCompletionsProvider:
    """`response_provider` for `MessageEngine` that POSTs to `<base_url>/api/chat/completions`.

    Authenticates with the `x-api-key` header. `model`, when given, is used
    for request bodies that name none. The request asks for a stream unless
    the body sets `stream` itself; a JSON answer is yielded as one completion.
    Calling it returns a generator of chunk dicts. Raises
    `ChatCompletionsHTTPError` on an HTTP error status,
    `ChatCompletionsStreamError` on an error event in the stream,
    `ChatCompletionsConnectionError` when the server cannot be reached, and
    `AbortError` once `abort_signal` is set: the abort shuts the connection
    down from the aborting thread, so a blocked read returns at once.
    `timeout` bounds connecting and each socket read, in seconds.
    """

    def __init__(self, base_url: str, api_key: str, model: str | None = None, timeout: float = DEFAULT_TIMEOUT):
        self.url = base_url.rstrip("/") + "/api/chat/completions"
        self.api_key = api_key
        self.model = model
        self.timeout = timeout

    def __call__(self, request_body: Mapping[str, Any], abort_signal: threading.Event | None = None) -> Iterator[dict]:
        body = dict(request_body)
        body.setdefault("stream", True)
        if self.model and not body.get("model"):
            body["model"] = self.model
        return self._chunks(body, abort_signal)

    def _chunks(self, body: dict[str, Any], abort_signal: threading.Event | None) -> Iterator[dict]:
        raise_if_aborted(abort_signal)
        response = self._post(body, abort_signal)
        cancel = on_abort(abort_signal, lambda: _shutdown(response))
        try:
            if response.status_code >= 400:
                raise _http_error(response)
            if "text/event-stream" not in response.headers.get("Content-Type", ""):
                yield response.json()
                return
            for chunk in sse_stream_to_generator(response, abort_signal):
                if isinstance(chunk, Mapping) and chunk.get("error") and not chunk.get("choices"):
                    raise ChatCompletionsStreamError(_error_message(chunk), body=chunk)
                yield chunk
        except (requests.RequestException, APIConnectionError) as exc:
            raise_if_aborted(abort_signal)
            raise ChatCompletionsConnectionError(f"reading {self.url} failed: {exc}") from exc
        finally:
            cancel()
            response.close()

    def _post(self, body: dict[str, Any], abort_signal: threading.Event | None) -> requests.Response:
        """POST in a worker thread, so an abort does not wait for the response headers."""
        outcome: dict[str, Any] = {}
        lock = threading.Lock()
        wake = threading.Event()

        def work() -> None:
            try:
                response = requests.post(
                    self.url, json=body, headers=self._headers(), stream=True, timeout=self.timeout
                )
            except Exception as exc:
                response, outcome["error"] = None, exc
            with lock:
                if outcome.get("abandoned") and response is not None:
                    response.close()  # the caller gave up on an abort; free the connection
                outcome["response"] = response
            wake.set()

        cancel = on_abort(abort_signal, wake.set)
        threading.Thread(target=work, name="chat-completions-post", daemon=True).start()
        try:
            wake.wait()
        finally:
            cancel()
        with lock:
            if "response" not in outcome:
                outcome["abandoned"] = True
                raise AbortError()
        if outcome.get("error") is not None:
            raise_if_aborted(abort_signal)
            raise ChatCompletionsConnectionError(f"POST {self.url} failed: {outcome['error']}") from outcome["error"]
        return outcome["response"]

    def _headers(self) -> dict[str, str]:
        return {
            "x-api-key": self.api_key,
            "Content-Type": "application/json",
            "Accept": "text/event-stream, application/json",
        }


def _http_error(response: requests.Response) -> ChatCompletionsHTTPError:
    try:
        body: Any = response.json()
    except ValueError:
        body = response.text
    detail = _error_message(body) if isinstance(body, Mapping) else str(body)[:500]
    return ChatCompletionsHTTPError(
        f"chat completions request failed with HTTP {response.status_code}: {detail}",
        response=response,
        body=body,
        retry_after=retry_after_seconds(response.headers),
    )


def _error_message(body: Mapping[str, Any]) -> str:
    error = body.get("error")
    if isinstance(error, Mapping):
        return str(error.get("message") or json.dumps(error))
    return str(error or json.dumps(body))


def _shutdown(response: requests.Response) -> None:
    """Wake a read blocked on `response` from another thread.

    Closing a socket from another thread does not interrupt a `recv` blocked on
    it, and http.client keeps the socket alive through its file object even
    after the connection object is closed; `shutdown()` reaches the socket
    itself and makes the blocked read return.
    """
    for sock in _sockets(response):
        with contextlib.suppress(OSError):
            sock.shutdown(socket.SHUT_RDWR)


def _sockets(response: requests.Response) -> list[socket.socket]:
    raw = getattr(response, "raw", None)
    candidates = [
        getattr(getattr(raw, "_connection", None), "sock", None),
        # urllib3 -> http.client.HTTPResponse -> BufferedReader -> SocketIO -> socket
        getattr(getattr(getattr(getattr(raw, "_fp", None), "fp", None), "raw", None), "_sock", None),
    ]
    return [s for s in candidates if isinstance(s, socket.socket)]
