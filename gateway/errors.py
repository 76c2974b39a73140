"""Errors in OpenAI's shape `{error: {message, type, code, param}}`, for the chat-completions gateway.

The gateway answers its callers the way OpenAI does, so an OpenAI client (the official Python one,
TinyRobot's `responseProvider`) raises its usual, typed errors. Vendor failures are mapped here to
fixed sentences: nothing a vendor said (it may echo keys or request content) reaches the caller.
"""
import json

from django.http import HttpResponse

from core.problems import Problem
from providers.base import ModelError

INVALID_REQUEST = "invalid_request_error"
SERVER_ERROR = "server_error"
# What OpenAI itself puts in `type` for a request-rate limit.
RATE_LIMIT = "requests"


def openai_error_body(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "code": code, "param": param}}


def openai_error_response(status: int, message: str, type_: str, code: str | None, param: str | None = None,
                          retry_after: int | None = None) -> HttpResponse:
    response = HttpResponse(json.dumps(openai_error_body(message, type_, code, param)), status=status,
                            content_type="application/json")
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response


# The project's problem codes whose OpenAI `code` is not the lower-cased code.
_CODES = {"VALIDATION_ERROR": "invalid_value"}


def openai_error_for(problem: Problem, instance: str = "") -> HttpResponse:
    """`problem` in OpenAI's shape: the gateway's error shape (core/error_shapes.py, gateway/apps.py)."""
    field = problem.extra.get("field")
    return openai_error_response(problem.status, problem.detail,
                                 SERVER_ERROR if problem.status >= 500 else INVALID_REQUEST,
                                 _CODES.get(problem.code, problem.code.lower()),
                                 param=None if field in (None, "body") else field,
                                 retry_after=problem.extra.get("retryAfter"))


class GatewayError(Exception):
    """An error the gateway answers before the first byte of a reply, as an HTTP status."""

    def __init__(self, status: int, message: str, *, type_: str = INVALID_REQUEST, code: str | None = None,
                 param: str | None = None, retry_after: int | None = None):
        super().__init__(message)
        self.status = status
        self.message = message
        self.type = type_
        self.code = code
        self.param = param
        self.retry_after = retry_after

    def body(self) -> dict:
        return openai_error_body(self.message, self.type, self.code, self.param)

    def response(self) -> HttpResponse:
        return openai_error_response(self.status, self.message, self.type, self.code, self.param, self.retry_after)


def invalid(message: str, param: str | None = None, code: str | None = None) -> GatewayError:
    return GatewayError(400, message, code=code, param=param)


def from_model_error(error: ModelError) -> GatewayError:
    """The HTTP answer for a vendor failure before the stream began.

    A vendor rate limit is passed on as 429 with its Retry-After; a request the vendor rejected as
    malformed is the caller's 400 (retrying it cannot help, and the openai client retries 5xx);
    bad vendor credentials, an unknown vendor model and every vendor outage are this server's
    problem, so 502.
    """
    if error.code == "LLM_RATE_LIMITED":
        return GatewayError(429, error.message, type_=RATE_LIMIT, code="upstream_rate_limited",
                            retry_after=error.retry_after_header)
    if error.code == "LLM_CLIENT_ERROR" and error.status in (400, 413, 422):
        return GatewayError(400, error.message, code="upstream_rejected")
    return GatewayError(502, error.message, type_=SERVER_ERROR, code="upstream_error")


def stream_error_body(error: ModelError) -> dict:
    """The `data: {"error": ...}` event that ends a stream the vendor broke off."""
    gateway_error = from_model_error(error)
    return openai_error_body(gateway_error.message, gateway_error.type, gateway_error.code)
