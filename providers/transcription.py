"""One call to an OpenAI-compatible `/audio/transcriptions` endpoint (docs/images-and-voice.md).

The upload is streamed from the file Django spooled it to (httpx reads it in chunks while it sends),
so a 25 MB recording is never held in memory and the event loop only waits on the network. Django-free:
the caller passes where to send it and gets the text back (with the vendor's token usage when it reported
one), or a TranscriptionError with a safe message (the upstream's own text may echo the request or
internals, so it is logged, never answered). The one caller is the metered door (telemetry/calls.py
`model_transcribe`), which admits and charges it.
"""
from __future__ import annotations

import asyncio

import logging
from dataclasses import dataclass
from typing import IO

import httpx

log = logging.getLogger(__name__)

OPENAI_BASE_URL = "https://api.openai.com/v1"


@dataclass(frozen=True)
class TranscriptionTarget:
    model: str
    base_url: str | None
    api_key: str | None
    timeout: float


@dataclass(frozen=True)
class Transcript:
    text: str
    # The vendor's token usage in OpenAI's chat names (`gpt-4o-transcribe` reports tokens; `whisper-1`
    # reports seconds, or nothing): None when it reported no tokens.
    usage: dict[str, int] | None = None


class TranscriptionError(Exception):
    """The transcription model failed; `status` and `code` are this server's answer to the caller."""

    def __init__(self, status: int, code: str, message: str, retry_after: str | None = None):
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


async def transcribe(target: TranscriptionTarget, *, file: IO[bytes], filename: str,
                     content_type: str) -> Transcript:
    """The transcript of the audio in `file`. Raises TranscriptionError."""
    url = (target.base_url or OPENAI_BASE_URL).rstrip("/") + "/audio/transcriptions"
    headers = {"Authorization": f"Bearer {target.api_key}"} if target.api_key else {}
    try:
        # The timeout bounds the whole exchange, not each read: a model trickling a byte at a time
        # never trips a per-read timeout (docs/images-and-voice.md).
        async with asyncio.timeout(target.timeout), httpx.AsyncClient(timeout=httpx.Timeout(target.timeout)) as client:
            response = await client.post(url, headers=headers, data={"model": target.model, "response_format": "json"},
                                         files={"file": (filename, file, content_type)})
    except (httpx.TimeoutException, TimeoutError) as exc:
        raise TranscriptionError(504, "TRANSCRIPTION_TIMEOUT", f"The transcription model did not answer within "
                                 f"{target.timeout:g} seconds.") from exc
    except httpx.HTTPError as exc:
        raise TranscriptionError(502, "TRANSCRIPTION_FAILED", "The transcription model could not be reached.") from exc
    if response.status_code != 200:
        log.warning("Transcription model answered %s: %.500s", response.status_code, response.text)
        raise _status_error(response)
    try:
        answer = response.json()
        text = answer["text"]
    except (ValueError, KeyError, TypeError):
        answer, text = None, None
    if not isinstance(text, str):
        raise TranscriptionError(502, "TRANSCRIPTION_FAILED", "The transcription model answered without a transcript.")
    return Transcript(text, _usage(answer.get("usage")))


def _usage(reported) -> dict[str, int] | None:
    """OpenAI's transcription usage (`{"type": "tokens", "input_tokens", "output_tokens", "total_tokens"}`)
    in the chat names the budgets read; None for any other (`{"type": "duration", "seconds"}`) or none."""
    if not isinstance(reported, dict) or reported.get("type") != "tokens":
        return None
    counts = [reported.get(name) for name in ("input_tokens", "output_tokens")]
    if not all(isinstance(count, int) and not isinstance(count, bool) and count >= 0 for count in counts):
        return None
    return {"prompt_tokens": counts[0], "completion_tokens": counts[1], "total_tokens": counts[0] + counts[1]}


def _status_error(response: httpx.Response) -> TranscriptionError:
    status = response.status_code
    if status == 429:
        return TranscriptionError(429, "TRANSCRIPTION_RATE_LIMITED", "The transcription model is rate limited; "
                                  "try again later.", response.headers.get("retry-after"))
    if status in (400, 413, 415, 422):
        return TranscriptionError(400, "INVALID_AUDIO", "The transcription model could not read this audio.")
    return TranscriptionError(502, "TRANSCRIPTION_FAILED", f"The transcription model failed (HTTP {status}).")
