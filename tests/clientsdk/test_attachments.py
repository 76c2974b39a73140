"""`Client.run(..., attachments=[...])` and `python -m clientsdk chat --attach FILE` send images and files
as resource parts, against the live server (the offline model says what it received)."""
from __future__ import annotations

import base64

import pexpect
import pytest

from clientsdk import Client
from clientsdk.attachments import attachment_part
from clientsdk.errors import BadRequestError
from tests.support.cli import spawn_chat
from tests.support.images import pdf, png

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def client(live_server_url, api_key):
    with Client(live_server_url, api_key, "alice", timeout=30) as c:
        yield c


def test_a_path_and_bytes_with_their_type_reach_the_model(client, tmp_path):
    picture = tmp_path / "plot.png"
    picture.write_bytes(png(20, 10))
    stream = client.run("Look at these", attachments=[picture, (pdf(), "application/pdf", "report.pdf")])
    for _ in stream:
        pass
    text = stream.snapshot.last_text
    assert f"image plot.png (image/png, {picture.stat().st_size} bytes)" in text
    assert f"file report.pdf (application/pdf, {len(pdf())} bytes)" in text
    stored = client.threads.retrieve(stream.thread_id).messages[0].content
    assert [b.type for b in stored] == ["text", "resource", "resource"]
    assert base64.b64decode(stored[1].resource.blob) == picture.read_bytes()


def test_a_file_of_unknown_type_is_refused_before_sending(tmp_path):
    odd = tmp_path / "data.unknownext"
    odd.write_bytes(b"x")
    with pytest.raises(ValueError, match="unknown"):
        attachment_part(odd)
    with pytest.raises(ValueError):
        attachment_part((b"x", ""))


def test_the_server_refuses_bytes_that_are_not_their_type(client):
    stream = client.run("see", attachments=[(b"plain text", "image/png", "fake.png")])
    with pytest.raises(BadRequestError) as caught:
        for _ in stream:
            pass
    assert "not image/png" in str(caught.value)


def test_the_cli_attaches_a_file_to_the_first_message(live_server_url, api_key, tmp_path):
    picture = tmp_path / "screen.png"
    picture.write_bytes(png(16, 16))
    child = spawn_chat(live_server_url, api_key, "cli-user", "--attach", str(picture))
    try:
        child.expect_exact("you> ")
        child.sendline("what is on my screen?")
        child.expect_exact("[attached] screen.png")
        child.expect_exact(f"I received: image screen.png (image/png, {picture.stat().st_size} bytes).")
        child.expect_exact("you> ")
        child.sendline("and now?")
        child.expect_exact("You said: and now?")
        child.expect_exact("you> ")
        assert "I received" not in child.before  # only the first message carried it
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
