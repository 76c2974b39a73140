"""What a model behind the OpenAI-compatible API receives for a message's images and files (the scripted
fake records it), and MCP resources (`@server:uri`) read from the project's MCP server before storing."""
from __future__ import annotations

import base64
import sys

import pytest

from tests.support.fake_openai import Text
from tests.support.images import b64, image_part, pdf, png
from tests.support.mcp_fixtures import SERVER_SCRIPT
from tests.support.mcp_server import tiny_png
from tests.support.problems import assert_problem
from tests.support.run_requests import run

pytestmark = pytest.mark.django_db(transaction=True)


def _user_parts(fake) -> list:
    return [m for m in fake.last_request.body["messages"] if m["role"] == "user"][-1]["content"]


def test_an_image_and_a_pdf_reach_the_model_byte_for_byte(oapi, fake):
    screenshot = png(300, 300, seed=7)
    fake.script(Text("A square of noise."))
    run(oapi, content=[{"type": "text", "text": "What is this?"}, image_part(screenshot, "noise.png"),
                       {"type": "resource", "resource": {"name": "spec.pdf", "mimeType": "application/pdf",
                                                          "blob": b64(pdf())}}])
    parts = _user_parts(fake)
    assert [p["type"] for p in parts] == ["text", "text", "image_url", "file"]
    assert parts[0]["text"] == "What is this?" and parts[1]["text"] == "[image: noise.png]"
    url = parts[2]["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert base64.b64decode(url.split(",", 1)[1]) == screenshot
    assert parts[3]["file"]["filename"] == "spec.pdf"
    assert base64.b64decode(parts[3]["file"]["file_data"].split(",", 1)[1]) == pdf()


def test_an_image_url_is_passed_as_a_url(oapi, fake):
    fake.script(Text("ok"))
    run(oapi, content=[{"type": "text", "text": "and this?"},
                       {"type": "resource", "resource": {"uri": "https://example.com/cat.jpg", "mimeType": "image/jpeg"}}])
    assert _user_parts(fake)[1] == {"type": "image_url", "image_url": {"url": "https://example.com/cat.jpg"}}


def _mcp(project):
    from tools.models import McpServer

    McpServer.objects.create(project=project, name="files", transport="stdio", command=sys.executable,
                             args=[str(SERVER_SCRIPT), "stdio"])


def test_mcp_resources_are_read_from_the_projects_server_and_stored_with_their_content(oapi, fake, project):
    _mcp(project)
    fake.script(Text("noted"))
    thread_id, _ = run(oapi, content=[{"type": "text", "text": "see"},
                                      {"type": "resource", "resource": {"uri": "@files:memo://note"}},
                                      {"type": "resource", "resource": {"uri": "@files:image://red-dot"}}])
    parts = _user_parts(fake)
    assert parts[1] == {"type": "text", "text": "the note says: buy milk"}
    assert base64.b64decode(parts[2]["image_url"]["url"].split(",", 1)[1]) == tiny_png()
    stored = oapi.thread(thread_id)["messages"][0]["content"]
    assert stored[1]["resource"] == {"uri": "@files:memo://note", "mimeType": "text/plain",
                                     "text": "the note says: buy milk"}


def test_an_mcp_resource_the_server_does_not_have_is_refused_naming_the_part(oapi, fake, project):
    _mcp(project)
    response = oapi.post("/v1/threads/runs", {"userKey": "alice", "message": {"role": "user", "content": [
        {"type": "resource", "resource": {"uri": "@files:memo://missing"}}]}})
    body = assert_problem(response, 400, "VALIDATION_ERROR", field="message.content[0].resource.uri")
    assert "'files'" in body["detail"]
    assert oapi.get("/v1/threads").json()["threads"] == []  # nothing stored
