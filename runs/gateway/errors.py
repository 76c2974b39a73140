"""Errors in OpenAI's shape `{error: {message, type, code, param}}`, for the chat-completions gateway."""
import json

from django.http import HttpResponse


def openai_error_body(message: str, type_: str, code: str | None, param: str | None = None) -> dict:
    return {"error": {"message": message, "type": type_, "code": code, "param": param}}


def openai_error_response(status: int, message: str, type_: str, code: str | None, param: str | None = None,
                          retry_after: int | None = None) -> HttpResponse:
    response = HttpResponse(json.dumps(openai_error_body(message, type_, code, param)), status=status,
                            content_type="application/json")
    if retry_after is not None:
        response["Retry-After"] = str(retry_after)
    return response
