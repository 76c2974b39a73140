"""Images and files in a run's message: the body limit of run routes, the checks of each part, and what
the (offline) model receives."""
from __future__ import annotations

import base64

import pytest
import requests
from django.conf import settings

from tests.support.images import b64, image_part, pdf, png
from tests.support.problems import assert_problem
from tests.support.run_requests import run, text_of

pytestmark = pytest.mark.django_db(transaction=True)


def _body(*content: dict) -> dict:
    return {"userKey": "alice", "message": {"role": "user", "content": list(content)}}


def _text(text: str) -> dict:
    return {"type": "text", "text": text}


def test_a_run_body_one_byte_over_max_run_bytes_is_refused_413(api):
    prefix = b'{"userKey":"alice","message":{"role":"user","content":[{"type":"text","text":"'
    suffix = b'"}]}}'
    body = prefix + b"x" * (settings.MAX_RUN_BYTES + 1 - len(prefix) - len(suffix)) + suffix
    assert len(body) == settings.MAX_RUN_BYTES + 1
    response = api.session.post(api.base_url + "/v1/threads/runs", data=body, timeout=60,
                                headers={"content-type": "application/json"})
    body = assert_problem(response, 413, "PAYLOAD_TOO_LARGE")
    assert str(settings.MAX_RUN_BYTES) in body["detail"]


def test_other_routes_keep_max_request_bytes(api):
    response = api.session.post(api.base_url + "/v1/threads", data=b" " * (settings.MAX_REQUEST_BYTES + 1),
                                timeout=30, headers={"content-type": "application/json"})
    assert_problem(response, 413, "PAYLOAD_TOO_LARGE")


def test_a_1_2_mb_screenshot_is_accepted_and_the_offline_model_says_what_it_received(api):
    screenshot = png(640, 640)
    assert len(screenshot) > 1_200_000
    thread_id, events = run(api, content=[_text("What is in this picture?"), image_part(screenshot, "shot.png")])
    assert f"I received: image shot.png (image/png, {len(screenshot)} bytes)." in text_of(events)
    # The message reads back as it was sent: the official clients render history from the parts.
    stored = api.thread(thread_id)["messages"][0]["content"]
    assert stored[1]["resource"]["blob"] == b64(screenshot)


def test_a_pdf_a_text_file_and_an_image_url_reach_the_model(api):
    note = base64.b64encode(b"remember the milk").decode()
    _, events = run(api, content=[
        _text("Read these"),
        {"type": "resource", "resource": {"name": "spec.pdf", "mimeType": "application/pdf", "blob": b64(pdf())}},
        {"type": "resource", "resource": {"name": "note.txt", "mimeType": "text/plain", "blob": note}},
        {"type": "resource", "resource": {"uri": "https://example.com/cat.png", "mimeType": "image/png"}},
    ])
    text = text_of(events)
    assert f"file spec.pdf (application/pdf, {len(pdf())} bytes)" in text
    assert "image at https://example.com/cat.png" in text
    assert "remember the milk" in text  # a text file is inlined as text


# Loopback, link-local (the cloud metadata address), private, shared and unspecified addresses, as literals,
# in forms a string match misses, and by a name that resolves to one (localhost, from /etc/hosts).
INTERNAL_URLS = ["http://169.254.169.254/latest/meta-data/x.png", "http://127.0.0.1:8000/admin.png",
                 "http://localhost/a.png", "http://0x7f.1/a.png", "http://[::1]/a.png",
                 "http://[::ffff:169.254.169.254]/a.png", "https://10.0.0.5/a.png", "http://192.168.1.1/a.png",
                 "http://100.64.0.1/a.png", "http://0.0.0.0/a.png"]


@pytest.mark.parametrize(("part", "field", "words"), [
    ({"type": "resource", "resource": {"name": "a.png", "mimeType": "image/png", "blob": "not base64!"}},
     "message.content[1].resource.blob", "not valid base64"),
    (image_part(b"just some text, not a picture", "fake.png"), "message.content[1].resource.blob", "not image/png"),
    (image_part(png(), "a.jpg", "image/jpeg"), "message.content[1].resource.blob", "not image/jpeg"),
    ({"type": "resource", "resource": {"name": "a.zip", "mimeType": "application/zip", "blob": b64(b"PK\x03\x04")}},
     "message.content[1].resource.mimeType", "application/zip"),
    ({"type": "resource", "resource": {"uri": "file:///etc/passwd", "mimeType": "image/png"}},
     "message.content[1].resource.uri", "http(s)"),
    ({"type": "resource", "resource": {"uri": "javascript:alert(1)"}}, "message.content[1].resource.uri", "http(s)"),
    ({"type": "resource", "resource": {"uri": "@nowhere:file:///a.txt"}}, "message.content[1].resource.uri",
     "'nowhere'"),
    ({"type": "resource", "resource": {"name": "empty"}}, "message.content[1].resource", "needs a blob"),
    *[({"type": "resource", "resource": {"uri": url, "mimeType": "image/png"}}, "message.content[1].resource.uri",
       "non-public") for url in INTERNAL_URLS],
], ids=["bad-base64", "text-as-png", "png-as-jpeg", "zip", "file-uri", "javascript-uri", "unknown-mcp-server",
        "no-content", *[f"internal-{i}" for i in range(len(INTERNAL_URLS))]])
def test_a_bad_part_is_refused_naming_it_and_nothing_is_stored(api, part, field, words):
    thread_id, _ = run(api, "first")
    before = api.thread(thread_id)
    response = api.post(f"/v1/threads/{thread_id}/runs",
                        {**_body(_text("look"), part), "previousRunId": before["lastCompletedRunId"]})
    body = assert_problem(response, 400, "VALIDATION_ERROR", field=field)
    assert words in body["detail"]
    after = api.thread(thread_id)
    assert len(after["messages"]) == len(before["messages"]) and after["runStatus"] == "idle"
    # The thread is usable after the refusal.
    _, events = run(api, "again", thread_id=thread_id, previousRunId=before["lastCompletedRunId"])
    assert "You said: again" in text_of(events)


@pytest.mark.parametrize("kind", ["images", "texts"])
def test_ten_thousand_tiny_parts_are_refused(api, kind):
    parts = [image_part(png(), f"p{i}.png") if kind == "images" else _text("x") for i in range(10_000)]
    response = api.post("/v1/threads/runs", _body(*parts))
    body = assert_problem(response, 400, "VALIDATION_ERROR", field="message.content")
    assert "at most" in body["detail"]
    assert api.get("/v1/threads").json()["threads"] == []


def test_a_chunked_run_body_over_the_limit_is_refused(api):
    def chunks():
        for _ in range(settings.MAX_RUN_BYTES // 65536 + 2):
            yield b" " * 65536
    response = requests.post(api.base_url + "/v1/threads/runs", data=chunks(), timeout=60,
                             headers={"x-api-key": api.session.headers["x-api-key"],
                                      "content-type": "application/json"})
    assert_problem(response, 413, "PAYLOAD_TOO_LARGE")
