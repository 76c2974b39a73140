"""The OpenAPI description of `POST /audio/transcribe` (docs/images-and-voice.md).

The view is a plain async Django view (tambo_project/audio_views.py) that drf-spectacular cannot see;
tambo_project/openapi.py, which assembles the whole document, adds this path to it. Each error
answer names the problem codes it can carry, as the `code` member's enum.
"""
from __future__ import annotations

from typing import Any

from django.conf import settings

from core.openapi import PROBLEM_REF, SECURITY
from core.problems import PROBLEM_CONTENT_TYPE

_RETRY_AFTER = {"Retry-After": {"description": "Seconds to wait before retrying.", "schema": {"type": "integer"}}}

# status: (what it means, the problem codes it carries)
_ERRORS: dict[str, tuple[str, list[str]]] = {
    "400": ("No `file` field, an empty file or one that is not audio (`VALIDATION_ERROR` with `field: file`), "
            "an invalid `userKey`, or audio the model refuses (`INVALID_AUDIO`).", ["VALIDATION_ERROR", "INVALID_AUDIO"]),
    "401": ("A missing, unknown or revoked API key, or no bearer token on a `tokenRequired` project.", ["UNAUTHORIZED"]),
    "413": ("The recording is larger than `MAX_AUDIO_BYTES`.", ["PAYLOAD_TOO_LARGE"]),
    "415": ("The body is not `multipart/form-data`.", ["UNSUPPORTED_MEDIA_TYPE"]),
    "429": ("Over the project's or user's run rate or token budget (a transcription counts as a run), or the "
            "transcription model is rate limited.", ["RATE_LIMITED", "BUDGET_EXCEEDED", "TRANSCRIPTION_RATE_LIMITED"]),
    "502": ("The transcription model failed, could not be reached or answered no transcript.", ["TRANSCRIPTION_FAILED"]),
    "501": ("The project has no transcription model (the detail says how to configure one) or its key is not "
            "available: a configuration to add, not a passing condition.", ["TRANSCRIPTION_UNAVAILABLE"]),
    "503": ("The database is unavailable or out of connections; retry after the `Retry-After` header's seconds.",
            ["SERVICE_UNAVAILABLE"]),
    "504": ("The transcription model did not answer within `TRANSCRIPTION_TIMEOUT` seconds.", ["TRANSCRIPTION_TIMEOUT"]),
}


def _problem(description: str, codes: list[str], status: str) -> dict[str, Any]:
    schema = {"allOf": [PROBLEM_REF, {"type": "object", "properties": {"code": {"type": "string", "enum": codes}}}]}
    answer: dict[str, Any] = {"description": description, "content": {PROBLEM_CONTENT_TYPE: {"schema": schema}}}
    if status in ("429", "503"):
        answer["headers"] = _RETRY_AFTER
    return answer


def audio_paths() -> dict[str, Any]:
    """The `/audio/transcribe` path item."""
    megabytes = settings.MAX_AUDIO_BYTES // (1024 * 1024)
    return {"/audio/transcribe": {"post": {
        "operationId": "audio_transcribe",
        "summary": "Transcribe a recording to text",
        "description": "What `@tambo-ai/typescript-sdk`'s `beta.audio.transcribe` and `@tambo-ai/react`'s "
                       "`useTamboVoice` send. The project's transcription model (an OpenAI-compatible "
                       "`/audio/transcriptions` endpoint) transcribes it; the API key alone is enough, a "
                       "bearer token or `userKey` names the user for per-user limits.",
        "tags": ["audio"],
        "security": SECURITY,
        "parameters": [{"name": "userKey", "in": "query", "required": False, "schema": {"type": "string"},
                        "description": "The end user, for per-user limits; optional."}],
        "requestBody": {"required": True, "content": {"multipart/form-data": {"schema": {
            "type": "object", "required": ["file"],
            "properties": {"file": {"type": "string", "format": "binary",
                                    "description": f"The recording, up to {megabytes} MB: mp3, wav, mp4, mpeg, "
                                                   "mpga, m4a, webm, ogg or flac (by its type or name)."}}}}}},
        "responses": {
            "200": {"description": "The transcript.", "content": {"text/plain": {"schema": {"type": "string"}}}},
            **{status: _problem(description, codes, status) for status, (description, codes) in _ERRORS.items()},
        },
    }}}
