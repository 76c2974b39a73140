"""The client's error tree, shaped like openai-python's.

    TamboError
    ├── APIError                      anything that went wrong talking to the server
    │   ├── APIStatusError            an HTTP answer with status >= 400 (problem+json body)
    │   │   ├── BadRequestError       400
    │   │   ├── AuthenticationError   401
    │   │   ├── NotFoundError         404
    │   │   ├── ConflictError         409
    │   │   ├── RateLimitError        429
    │   │   └── InternalServerError   >= 500
    │   ├── APIConnectionError        no answer at all (refused, reset, DNS)
    │   │   └── APITimeoutError       the answer did not come in time
    │   ├── APIResponseValidationError  an answer or event that does not match the wire models
    │   └── RunError                  the run ended with a RUN_ERROR event
    └── MaxStepsExceeded              the tool loop stopped after `max_steps` rounds, run left paused

Every APIError has `code`: the problem's stable `code` field (`THREAD_NOT_FOUND`, ...) or the
RUN_ERROR event's code, None when the server sent none.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import requests

    from .accumulate import ThreadSnapshot

__all__ = [
    "TamboError",
    "APIError",
    "APIStatusError",
    "BadRequestError",
    "AuthenticationError",
    "NotFoundError",
    "ConflictError",
    "RateLimitError",
    "InternalServerError",
    "APIConnectionError",
    "APITimeoutError",
    "APIResponseValidationError",
    "RunError",
    "MaxStepsExceeded",
    "status_error_from_response",
]


class TamboError(Exception):
    """Base class of every exception this package raises on purpose."""


class APIError(TamboError):
    def __init__(self, message: str, *, code: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class APIStatusError(APIError):
    """The server answered with an error status. `problem` is the parsed problem+json body."""

    def __init__(self, message: str, *, response: requests.Response, problem: dict[str, Any] | None) -> None:
        problem = problem or {}
        code = problem.get("code") if isinstance(problem.get("code"), str) else None
        super().__init__(message, code=code)
        self.response = response
        self.status_code = response.status_code
        self.problem = problem

    def __str__(self) -> str:
        code = f" {self.code}" if self.code else ""
        return f"{self.status_code}{code}: {self.message}"


class BadRequestError(APIStatusError):
    pass


class AuthenticationError(APIStatusError):
    pass


class NotFoundError(APIStatusError):
    pass


class ConflictError(APIStatusError):
    pass


class RateLimitError(APIStatusError):
    pass


class InternalServerError(APIStatusError):
    pass


class APIConnectionError(APIError):
    def __init__(self, message: str = "Connection error.") -> None:
        super().__init__(message)


class APITimeoutError(APIConnectionError):
    def __init__(self, message: str = "Request timed out.") -> None:
        super().__init__(message)


class APIResponseValidationError(APIError):
    pass


class RunError(APIError):
    """A run ended with RUN_ERROR. `snapshot` is the thread snapshot at that moment (if known)."""

    def __init__(
        self,
        message: str,
        *,
        code: str | None = None,
        category: str | None = None,
        is_retryable: bool = False,
        run_id: str | None = None,
        snapshot: ThreadSnapshot | None = None,
    ) -> None:
        super().__init__(message, code=code)
        self.category = category
        self.is_retryable = is_retryable
        self.run_id = run_id
        self.snapshot = snapshot

    def __str__(self) -> str:
        return f"{self.code}: {self.message}" if self.code else self.message


class MaxStepsExceeded(TamboError):
    """The model asked for another round of client tools after `max_steps` rounds.

    Nothing was cancelled: the run is paused on the server with its tool calls pending, exactly as
    `auto_execute_tools=False` would leave it. `snapshot.pending_tool_calls` lists them; answer them
    with `client.submit_tool_results(...)` to go on, or send a new message to abandon them.
    """

    def __init__(self, max_steps: int, snapshot: ThreadSnapshot) -> None:
        super().__init__(f"stopped after {max_steps} tool round(s); the run is paused with tool calls pending")
        self.max_steps = max_steps
        self.snapshot = snapshot


_STATUS_CLASSES: dict[int, type[APIStatusError]] = {
    400: BadRequestError,
    401: AuthenticationError,
    404: NotFoundError,
    409: ConflictError,
    429: RateLimitError,
}


def status_error_from_response(response: requests.Response) -> APIStatusError:
    """Build the APIStatusError subclass for an error answer, reading its problem+json body."""
    try:
        body = response.json()
    except ValueError:
        body = None
    problem = body if isinstance(body, dict) else None
    message = ""
    if problem:
        message = str(problem.get("detail") or problem.get("title") or "")
    if not message:
        message = (response.text or response.reason or "").strip()[:500] or f"HTTP {response.status_code}"
    status = response.status_code
    cls = InternalServerError if status >= 500 else _STATUS_CLASSES.get(status, APIStatusError)
    return cls(message, response=response, problem=problem)
