"""POST /audio/transcribe (docs/images-and-voice.md): a recording reaches the project's transcription model
(the tests' fake OpenAI-compatible server) byte for byte, and every bad upload is a clear problem."""
from __future__ import annotations

import hashlib
import io

import pytest
import requests
from cryptography.fernet import Fernet
from django.conf import settings
from django.core.management import call_command

from projects.config import ProjectSettings, TranscriptionSpec, project_settings_save
from projects.models import Project
from tests.support import node
from tests.support.fake_openai import HTTPError, Stall, Text
from tests.support.fixtures_openai import fake, vendor  # noqa: F401 - fixtures
from tests.support.live import LiveServer
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)

# The live server and this process share one Fernet key, so a key apply_projects stores encrypted here
# is decrypted there.
SECRETS_KEY = Fernet.generate_key().decode()
WAV = b"RIFF\x24\x00\x00\x00WAVEfmt " + bytes(range(256)) * 4  # bytes of every value, to compare exactly


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    # A short timeout of its own, so the hanging-model test ends soon.
    live = LiveServer("audio", {"TRANSCRIPTION_TIMEOUT": "2", "SECRETS_KEYS": SECRETS_KEY})
    yield live
    live.stop()


def _configure(project: Project, vendor, **changes) -> None:
    spec = TranscriptionSpec(model="whisper-1", base_url=vendor.base_url, api_key="sk-transcribe-secret", **changes)
    project_settings_save(project, ProjectSettings(transcription=spec))


def _post(server, api_key, files=None, **kwargs):
    return requests.post(f"{server.url}/audio/transcribe", headers={"x-api-key": api_key}, files=files,
                         timeout=30, **kwargs)


def test_a_recording_reaches_the_transcription_model_and_its_text_comes_back(server, project, api_key, vendor, fake):
    _configure(project, vendor)
    fake.script(Text("What is the weather in Paris?"))
    response = _post(server, api_key, {"file": ("question.wav", WAV, "audio/wav")})
    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == "What is the weather in Paris?"
    [seen] = fake.requests
    assert seen.path == "/v1/audio/transcriptions"
    assert seen.api_key == "sk-transcribe-secret"
    assert seen.body["model"] == "whisper-1"
    assert seen.body["file"] == {"filename": "question.wav", "contentType": "audio/wav", "data": WAV}


def test_the_official_sdk_transcribes_with_the_key_alone(server, project, api_key, vendor, fake):
    _configure(project, vendor)
    fake.script(Text("hello from node"))
    result = node.run_scenario("audio.mjs", "transcribe", server.url, api_key, package="@tambo-ai/typescript-sdk")
    assert result["text"] == "hello from node"
    [seen] = fake.requests
    assert len(seen.body["file"]["data"]) == result["bytes"]
    assert hashlib.sha256(seen.body["file"]["data"]).hexdigest() == result["sha256"]


def _apply_transcription(tmp_path, vendor, api_key: str) -> str:
    """Applies a project file whose transcription key is written literally (so stored encrypted);
    returns a new API key of that project."""
    from projects.models import ApiKey

    path = tmp_path / "projects.yaml"
    path.write_text(f"""
projects:
  - name: speaks
    transcription: {{provider: openai, model: whisper-1, baseUrl: '{vendor.base_url}', apiKey: '{api_key}'}}
""")
    call_command("apply_projects", str(path), stdout=io.StringIO())
    _, raw = ApiKey.generate(Project.objects.get(name="speaks"), "tests")
    return raw


def test_a_transcription_key_stored_encrypted_is_decrypted_when_a_recording_comes_in(server, vendor, fake, tmp_path,
                                                                                      settings):
    settings.SECRETS_KEYS = [SECRETS_KEY]
    key = _apply_transcription(tmp_path, vendor, "sk-stored-transcription-key")
    stored = Project.objects.get(name="speaks").settings["transcription"]["apiKey"]
    assert stored.startswith("fernet:") and "sk-stored-transcription-key" not in stored
    fake.script(Text("stored keys work"))
    response = _post(server, key, {"file": ("a.wav", WAV, "audio/wav")})
    assert response.status_code == 200, response.text
    assert response.text == "stored keys work"
    [seen] = fake.requests
    assert seen.api_key == "sk-stored-transcription-key"


def test_a_stored_key_the_server_cannot_decrypt_is_501_and_nothing_is_sent(server, vendor, fake, tmp_path, settings):
    settings.SECRETS_KEYS = [Fernet.generate_key().decode()]  # not the server's
    key = _apply_transcription(tmp_path, vendor, "sk-other-key")
    body = assert_problem(_post(server, key, {"file": ("a.wav", WAV, "audio/wav")}), 501, "TRANSCRIPTION_UNAVAILABLE")
    assert "SECRETS_KEYS" in body["detail"] and "sk-other-key" not in body["detail"]
    assert fake.requests == []


def test_without_a_transcription_model_the_sdk_gets_501_transcription_unavailable(server, api_key):
    # Not a 503: nothing passes by waiting, so no Retry-After is promised (every 503 carries one).
    result = node.run_scenario("audio.mjs", "unavailable", server.url, api_key, package="@tambo-ai/typescript-sdk")
    assert result == {"scenario": "unavailable", "ok": True, "status": 501, "code": "TRANSCRIPTION_UNAVAILABLE"}
    response = _post(server, api_key, {"file": ("a.wav", WAV, "audio/wav")})
    body = assert_problem(response, 501, "TRANSCRIPTION_UNAVAILABLE")
    assert "transcription:" in body["detail"]  # it says how to configure one


def test_an_unset_key_variable_is_named(server, project, api_key, vendor, monkeypatch):
    spec = TranscriptionSpec(model="whisper-1", base_url=vendor.base_url, api_key="env:TAMBO_TEST_UNSET_KEY")
    project_settings_save(project, ProjectSettings(transcription=spec))
    body = assert_problem(_post(server, api_key, {"file": ("a.wav", WAV, "audio/wav")}), 501,
                          "TRANSCRIPTION_UNAVAILABLE")
    assert "TAMBO_TEST_UNSET_KEY" in body["detail"]


@pytest.mark.parametrize(("files", "data", "status", "code", "field"), [
    ({"file": ("empty.wav", b"", "audio/wav")}, None, 400, "VALIDATION_ERROR", "file"),
    ({"other": ("a.wav", WAV, "audio/wav")}, None, 400, "VALIDATION_ERROR", "file"),
    ({"file": ("notes.txt", b"hello", "text/plain")}, None, 400, "VALIDATION_ERROR", "file"),
    (None, {"file": "not a file"}, 415, "UNSUPPORTED_MEDIA_TYPE", None),
], ids=["empty", "no-file-field", "not-audio", "not-multipart"])
def test_a_bad_upload_is_refused(server, project, api_key, vendor, fake, files, data, status, code, field):
    _configure(project, vendor)
    response = _post(server, api_key, files, data=data)
    assert_problem(response, status, code, **({"field": field} if field else {}))
    assert fake.requests == []  # nothing reached the model


def test_a_recording_over_25_mb_is_refused_413(server, project, api_key, vendor, fake):
    _configure(project, vendor)
    big = WAV + b"\x00" * (settings.MAX_AUDIO_BYTES + 1 - len(WAV))
    assert_problem(_post(server, api_key, {"file": ("long.wav", big, "audio/wav")}), 413, "PAYLOAD_TOO_LARGE")
    assert fake.requests == []


@pytest.mark.parametrize(("reply", "status", "code"), [
    (HTTPError(500), 502, "TRANSCRIPTION_FAILED"),
    (Stall(seconds=30), 504, "TRANSCRIPTION_TIMEOUT"),
    (HTTPError(400), 400, "INVALID_AUDIO"),
], ids=["model-500", "model-hangs", "model-refuses-audio"])
def test_a_failing_transcription_model_is_a_clear_problem(server, project, api_key, vendor, fake, reply, status, code):
    _configure(project, vendor)
    fake.script(reply)
    response = _post(server, api_key, {"file": ("a.wav", WAV, "audio/wav")})
    body = assert_problem(response, status, code)
    assert "sk-transcribe-secret" not in response.text and "Fake" not in body["detail"]


def test_a_token_required_project_needs_the_bearer(server, project, api_key, vendor, fake):
    spec = TranscriptionSpec(model="whisper-1", base_url=vendor.base_url, api_key="sk-x")
    project_settings_save(project, ProjectSettings(transcription=spec, token_required=True))
    response = _post(server, api_key, {"file": ("a.wav", WAV, "audio/wav")})
    assert_problem(response, 401, "USER_TOKEN_REQUIRED")  # as on every other route
    assert fake.requests == []


def test_a_user_key_when_sent_must_be_valid(server, project, api_key, vendor, fake):
    _configure(project, vendor)
    response = _post(server, api_key, {"file": ("a.wav", WAV, "audio/wav")}, params={"userKey": "x" * 300})
    assert_problem(response, 400, "VALIDATION_ERROR", field="userKey")


def test_a_transcription_counts_against_the_projects_run_rate(server, project, api_key, vendor, fake):
    from projects.config import Limits

    spec = TranscriptionSpec(model="whisper-1", base_url=vendor.base_url, api_key="sk-x")
    project_settings_save(project, ProjectSettings(transcription=spec, limits=Limits(runs_per_minute=1)))
    fake.script(Text("once"))

    first = _post(server, api_key, {"file": ("a.wav", WAV, "audio/wav")})
    second = _post(server, api_key, {"file": ("a.wav", WAV, "audio/wav")})

    assert first.status_code == 200, first.text
    assert_problem(second, 429, "RATE_LIMITED")
    assert int(second.headers["Retry-After"]) >= 1
    assert len(fake.requests) == 1


def test_a_transcription_model_that_trickles_its_answer_is_cut_at_the_total_deadline(project, api_key):
    """A byte every 2 s never trips a per-read timeout of 5 s: TRANSCRIPTION_TIMEOUT bounds the whole
    exchange (issue 33), counted in bytes the model got to send, not timed."""
    from tests.support.stalling_http import TricklingServer

    body = b'{"text": "' + b"a slow transcript" * 2 + b'"}'
    live = LiveServer("audio-trickle", {"TRANSCRIPTION_TIMEOUT": "5"})
    try:
        with TricklingServer(body, interval=2.0) as trickling:
            spec = TranscriptionSpec(model="whisper-1", base_url=trickling.url("/v1"), api_key="sk-x")
            project_settings_save(project, ProjectSettings(transcription=spec))
            response = requests.post(f"{live.url}/audio/transcribe", headers={"x-api-key": api_key},
                                     files={"file": ("a.wav", WAV, "audio/wav")}, timeout=120)
            sent = trickling.sent
        assert_problem(response, 504, "TRANSCRIPTION_TIMEOUT")
        assert sent <= 3 < len(body), sent  # 5 s of a byte every 2 s, not the whole answer
    finally:
        live.stop()
