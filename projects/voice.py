"""Voice input (docs/images-and-voice.md): who may transcribe, with which model, what.

The view (tambo_project/audio_views.py) reads the upload and calls these; the call to the model goes
through the metered door (telemetry/calls.py `model_transcribe`: admitted, charged, recorded), which calls
providers/transcription.py.
"""
from __future__ import annotations

from pathlib import PurePosixPath

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured

from core.problems import Problem, validation_error
from projects import access
from projects.auth import Principal
from projects.config import project_settings
from projects.secrets import SecretUnreadable, secret_resolve
from providers.base import MissingSecret
from providers.transcription import TranscriptionTarget

# What the reference accepts (mp3, wav, mp4, mpeg, mpga, m4a, webm), and the types browsers' MediaRecorder
# and file pickers give those files.
AUDIO_EXTENSIONS = {".mp3", ".wav", ".mp4", ".mpeg", ".mpga", ".m4a", ".webm", ".ogg", ".oga", ".flac"}
AUDIO_TYPES = ("audio/", "video/mp4", "video/webm", "video/mpeg")

UNAVAILABLE_DETAIL = ("This project has no transcription model. Add one to the project file "
                      "(transcription: {provider: openai, model: whisper-1, apiKey: env:OPENAI_API_KEY}) "
                      "and apply it with manage.py apply_projects, or set it in the admin.")


def transcription_available(project) -> bool:
    return project_settings(project).transcription is not None


def transcription_check_access(principal: Principal, user_key: str | None) -> str | None:
    """The user the request names (None: the key alone, as the SDKs send it). A `tokenRequired`
    project needs the bearer token; a userKey, when sent, must be valid. Raises Problem. The call's
    admission (rates, budgets) is the door's, when the recording is in hand."""
    if project_settings(principal.project).token_required and principal.token_user_key is None \
            and principal.session_user_key is None:
        raise access.USER_TOKEN_REQUIRED
    if user_key is None and principal.token_user_key is None and principal.session_user_key is None:
        user = None
    else:
        user = principal.user_key_checked(user_key)
    return user


def transcription_target(project) -> TranscriptionTarget:
    """Where the project's transcriptions go. Raises 501 TRANSCRIPTION_UNAVAILABLE when none is
    configured, its key's `env:` variable is not set, or its stored key does not decrypt."""
    spec = project_settings(project).transcription
    if spec is None:
        raise unavailable(UNAVAILABLE_DETAIL)
    return TranscriptionTarget(model=spec.model, base_url=spec.base_url, api_key=_secret(spec.api_key),
                               timeout=settings.TRANSCRIPTION_TIMEOUT)


def unavailable(detail: str) -> Problem:
    # 501, not 503: the server is not down, the project lacks a configuration that retrying cannot
    # bring (a 503 promises a Retry-After, docs/protocol.md#errors).
    return Problem(501, "TRANSCRIPTION_UNAVAILABLE", detail)


def _secret(value: str | None) -> str | None:
    """The key itself: an `env:` variable read now, a stored (`fernet:`) value decrypted now, the way a
    model's key is (projects/secrets.py), so a key typed into the admin or the project file works."""
    try:
        return secret_resolve(value)
    except MissingSecret as missing:
        raise unavailable(f"The transcription model's key comes from the environment variable {missing.name}, "
                          "which is not set.") from None
    except (SecretUnreadable, ImproperlyConfigured):
        raise unavailable("The transcription model's stored key cannot be decrypted with this server's "
                          "SECRETS_KEYS; set the key again.") from None


def audio_check(*, name: str, content_type: str, size: int) -> None:
    """Refuses an upload that is empty, over MAX_AUDIO_BYTES, or not audio. Raises Problem."""
    if size == 0:
        raise validation_error("file is empty.", field="file")
    if size > settings.MAX_AUDIO_BYTES:
        raise Problem(413, "PAYLOAD_TOO_LARGE", f"file is larger than {settings.MAX_AUDIO_BYTES} bytes.")
    kind = content_type.split(";", 1)[0].strip().lower()
    if not (kind.startswith(AUDIO_TYPES) or PurePosixPath(name.lower()).suffix in AUDIO_EXTENSIONS):
        raise validation_error(f"file is {kind or 'of no type'}, not audio: send mp3, wav, mp4, mpeg, mpga, "
                               "m4a or webm.", field="file")
