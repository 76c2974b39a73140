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
    │   ├── RunError                  the run ended with a RUN_ERROR event
    │   └── ChatCompletionsError      the message engine's gateway provider (`clientsdk.message`)
    │       ├── ChatCompletionsHTTPError        also an APIStatusError: the gateway answered >= 400
    │       ├── ChatCompletionsStreamError      an `{"error": ...}` event in the stream
    │       └── ChatCompletionsConnectionError  also an APIConnectionError
    ├── MaxStepsExceeded              the tool loop stopped after `max_steps` rounds, run left paused
    └── AbortError                    the message engine's request was aborted (`clientsdk.message`)

Every APIError has `code`: the problem's stable `code` field (`THREAD_NOT_FOUND`, ...), the
RUN_ERROR event's code, or the chat-completions error's `error.code` (`invalid_api_key`, ...);
None when the server sent none. `except clientsdk.APIStatusError` thus catches an error status
from either API, and `except clientsdk.APIConnectionError` a lost connection to either.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover
    import requests

    from .snapshot import ThreadSnapshot

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
    "AbortError",
    "ChatCompletionsError",
    "ChatCompletionsHTTPError",
    "ChatCompletionsStreamError",
    "ChatCompletionsConnectionError",
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


class AbortError(TamboError):
    """Raised inside a message engine's turn when its abort signal has fired."""

    def __init__(self, message: str = "The request was aborted.") -> None:
        super().__init__(message)


class ChatCompletionsError(APIError):
    """Base of the errors the message engine's gateway provider raises. `body` is the parsed error
    answer or event (OpenAI's `{"error": {"message", "type", "code"}}`), when there was one."""

    def __init__(self, message: str, *, body: Any = None) -> None:
        # Not super(): in the subclasses that are also an APIStatusError or APIConnectionError the
        # next class in line takes other arguments; each sets its own attributes.
        APIError.__init__(self, message, code=_openai_error_code(body))
        self.body = body


class ChatCompletionsHTTPError(ChatCompletionsError, APIStatusError):
    """The gateway answered with an HTTP error status (before any chunk was sent).
    `retry_after` is the seconds its Retry-After header asked for, None without a usable one."""

    def __init__(self, message: str, *, response: requests.Response, body: Any = None,
                 retry_after: float | None = None) -> None:
        ChatCompletionsError.__init__(self, message, body=body)
        self.response = response
        self.status_code = response.status_code
        self.problem = body if isinstance(body, dict) else {}
        self.retry_after = retry_after

    def __str__(self) -> str:
        return self.message


class ChatCompletionsStreamError(ChatCompletionsError):
    """The stream ended with an `{"error": ...}` event (the vendor failed mid-answer)."""


class ChatCompletionsConnectionError(ChatCompletionsError, APIConnectionError):
    """The gateway could not be reached, or the connection broke."""

    def __init__(self, message: str) -> None:
        ChatCompletionsError.__init__(self, message)


def _openai_error_code(body: Any) -> str | None:
    error = body.get("error") if isinstance(body, dict) else None
    code = error.get("code") if isinstance(error, dict) else None
    return code if isinstance(code, str) else None


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
