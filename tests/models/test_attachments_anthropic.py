"""What a model behind Anthropic's Messages API receives for a message's images and files: the
recording fake Anthropic server sees the upload's exact bytes as an `image` block, a PDF as a
`document` block and an image URL as a URL source (docs/images-and-voice.md)."""
from __future__ import annotations

import base64

import pytest

from tests.models.conftest import anthropic_model, apply_file, project_runs
from tests.runs.conftest import text_of
from tests.support.fake_openai import Text
from tests.support.images import b64, image_part, pdf, png

pytestmark = pytest.mark.django_db(transaction=True)


def _user_blocks(ant) -> list[dict]:
    (request,) = ant.requests
    return [m for m in request.body["messages"] if m["role"] == "user"][-1]["content"]


def _claude_project(tmp_path, ant, name: str):
    apply_file(tmp_path, f"""
projects:
  - name: {name}
    models: [{anthropic_model(ant.fake)}]
""")


def test_an_image_and_a_pdf_reach_claude_byte_for_byte(tmp_path, models_url, ant):
    _claude_project(tmp_path, ant, "claude-sees-images")
    screenshot = png(300, 300, seed=11)
    ant.script(Text("A square of noise and an empty page."))
    message = {"role": "user", "content": [
        {"type": "text", "text": "What are these?"}, image_part(screenshot, "noise.png"),
        {"type": "resource", "resource": {"name": "spec.pdf", "mimeType": "application/pdf", "blob": b64(pdf())}}]}
    _, events = project_runs(models_url, "claude-sees-images").run_new(message)
    assert text_of(events) == "A square of noise and an empty page."
    blocks = _user_blocks(ant)
    assert [b["type"] for b in blocks] == ["text", "text", "image", "document"]
    assert blocks[0]["text"] == "What are these?" and blocks[1]["text"] == "[image: noise.png]"
    image = blocks[2]["source"]
    assert image["type"] == "base64" and image["media_type"] == "image/png"
    assert base64.b64decode(image["data"]) == screenshot
    document = blocks[3]["source"]
    assert document["type"] == "base64" and document["media_type"] == "application/pdf"
    assert base64.b64decode(document["data"]) == pdf()


def test_an_image_url_reaches_claude_as_a_url_source(tmp_path, models_url, ant):
    _claude_project(tmp_path, ant, "claude-sees-urls")
    ant.script(Text("A cat."))
    message = {"role": "user", "content": [
        {"type": "text", "text": "and this?"},
        {"type": "resource", "resource": {"uri": "https://example.com/cat.jpg", "mimeType": "image/jpeg"}}]}
    project_runs(models_url, "claude-sees-urls").run_new(message)
    assert _user_blocks(ant) == [{"type": "text", "text": "and this?"},
                                 {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}]
