"""The HTTP core: auth header, error mapping, bounded retries with backoff.

Non-streaming calls are retried (at most `max_retries` times) on connection errors, timeouts, 429
and 5xx, waiting `Retry-After` when the server sends one and otherwise an exponential backoff with
jitter. Streaming calls (starting a run) are never retried: a run may have started on the server,
and running the model twice is worse than reporting the error.
"""
from __future__ import annotations

import logging
import random
import time
from typing import Any, TypeVar

import requests
from pydantic import BaseModel, ValidationError

from .errors import (
    APIConnectionError,
    APIResponseValidationError,
    APITimeoutError,
    status_error_from_response,
)
from .retry_after import retry_after_seconds

__all__ = ["HTTPCore", "retry_delay"]

logger = logging.getLogger("clientsdk")

M = TypeVar("M", bound=BaseModel)

INITIAL_RETRY_DELAY = 0.5
MAX_RETRY_DELAY = 8.0
# A Retry-After beyond this is not honoured: the usual backoff applies instead.
MAX_RETRY_AFTER = 60.0


def retry_delay(attempt: int, response: requests.Response | None = None) -> float:
    """Seconds to wait before retry number `attempt` (0-based)."""
    retry_after = retry_after_seconds(response.headers) if response is not None else None
    if retry_after is not None and 0 <= retry_after <= MAX_RETRY_AFTER:
        return retry_after
    delay = min(INITIAL_RETRY_DELAY * 2**attempt, MAX_RETRY_DELAY)
    # Full jitter on a quarter of the delay spreads clients that failed together.
    return delay * (1 - 0.25 * random.random())


def _should_retry(response: requests.Response) -> bool:
    if response.headers.get("x-should-retry") == "false":
        return False
    return response.status_code == 429 or response.status_code >= 500


class HTTPCore:
    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float,
        max_retries: int,
        session: requests.Session | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key
        self.timeout = timeout
        self.max_retries = max_retries
        self.session = session or requests.Session()
        self.session.headers.update({"x-api-key": api_key, "User-Agent": "tambo-clientsdk-python"})

    def close(self) -> None:
        self.session.close()

    def _send(self, method: str, path: str, *, stream: bool, **kwargs: Any) -> requests.Response:
        try:
            return self.session.request(method, self.base_url + path, timeout=self.timeout, stream=stream, **kwargs)
        except requests.Timeout as exc:
            raise APITimeoutError() from exc
        except requests.RequestException as exc:
            raise APIConnectionError(f"Connection error: {exc.__class__.__name__}.") from exc

    def request(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """Send a non-streaming request with retries; return the successful response or raise."""
        attempt = 0
        while True:
            try:
                response = self._send(method, path, stream=False, **kwargs)
            except APIConnectionError:
                if attempt >= self.max_retries:
                    raise
                delay = retry_delay(attempt)
                logger.info("%s %s failed to connect; retrying in %.2fs", method, path, delay)
            else:
                if response.status_code < 400:
                    return response
                if attempt >= self.max_retries or not _should_retry(response):
                    raise status_error_from_response(response)
                delay = retry_delay(attempt, response)
                logger.info("%s %s answered %s; retrying in %.2fs", method, path, response.status_code, delay)
                response.close()
            time.sleep(delay)
            attempt += 1

    def request_model(self, method: str, path: str, model: type[M], **kwargs: Any) -> M:
        response = self.request(method, path, **kwargs)
        try:
            return model.model_validate(response.json())
        except (ValueError, ValidationError) as exc:
            raise APIResponseValidationError(f"unexpected answer to {method} {path}: {exc}") from exc

    def stream(self, method: str, path: str, **kwargs: Any) -> requests.Response:
        """Open a streaming request once (no retries); raise for an error status before the stream."""
        response = self._send(method, path, stream=True, **kwargs)
        if response.status_code >= 400:
            try:
                response.content  # read the problem body before closing the connection
            except requests.RequestException:
                pass
            response.close()
            raise status_error_from_response(response)
        return response
