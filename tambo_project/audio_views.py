"""POST /audio/transcribe: a recording in, its text out (docs/images-and-voice.md).

What `@tambo-ai/typescript-sdk`'s `beta.audio.transcribe` and `@tambo-ai/react`'s `useTamboVoice` send:
multipart with the recording in `file`, the API key alone. The ASGI edge bounds the body
(tambo_project/asgi_limits.py); Django spools it to a temporary file, which is parsed on a worker thread
and streamed to the project's transcription model, so the event loop never holds the upload. The call
goes through the metered door (telemetry/calls.py `model_transcribe`): counted against the project's rates
and budgets (429), charged and recorded as a `transcription` usage row.
"""
from __future__ import annotations

import asyncio

from django.http import HttpRequest, HttpResponse
from django.http.multipartparser import MultiPartParserError
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from core.db import db_call
from core.problems import Problem, validation_error
from projects.auth import principal_aresolve
from projects.voice import audio_check, transcription_check_access, transcription_target
from providers.transcription import TranscriptionError
from telemetry.calls import CallScope, model_transcribe
from telemetry.models import Usage


@csrf_exempt
@require_http_methods(["POST"])
async def transcribe_view(request: HttpRequest) -> HttpResponse:
    try:
        principal = await principal_aresolve(request)
        user = await db_call(transcription_check_access, principal, request.GET.get("userKey"))
        target = transcription_target(principal.project)
        upload = await asyncio.to_thread(_upload, request)
        audio_check(name=upload.name or "", content_type=upload.content_type or "", size=upload.size or 0)
        try:
            # Admitted here, once the recording is known to be one: a bad upload counts against nothing.
            scope = CallScope(principal.project, Usage.Kind.TRANSCRIPTION, user_key=user)
            text = await model_transcribe(target, scope, file=upload.file, filename=upload.name or "audio.webm",
                                          content_type=upload.content_type or "application/octet-stream")
        finally:
            await asyncio.to_thread(upload.close)
    except TranscriptionError as error:
        # The vendor's failure as this API's problem (its fixed message, its Retry-After).
        extra = {"retryAfter": error.retry_after} if error.retry_after else {}
        raise Problem(error.status, error.code, error.message, **extra) from None
    return HttpResponse(text, content_type="text/plain; charset=utf-8")


def _upload(request: HttpRequest):
    """The `file` part of a multipart body (parsed here, on a worker thread). Raises Problem."""
    if not (request.content_type or "").startswith("multipart/form-data"):
        raise Problem(415, "UNSUPPORTED_MEDIA_TYPE", "Send the recording as multipart/form-data with the field file.")
    try:
        upload = request.FILES.get("file")
    except MultiPartParserError:
        raise validation_error("The multipart body could not be read.", field="body") from None
    if upload is None:
        raise validation_error("The multipart body has no file field.", field="file")
    return upload
