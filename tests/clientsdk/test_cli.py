"""`python -m clientsdk chat`, driven in a pseudo-terminal against the live server."""
from __future__ import annotations

import pexpect
import pytest

from clientsdk import Client
from clientsdk.cli import local_time, roll_dice
from tests.support.cli import spawn_chat

pytestmark = pytest.mark.django_db(transaction=True)


def test_roll_dice_and_local_time_are_real_tools():
    result = roll_dice(sides=6, count=3)
    assert len(result["rolls"]) == 3 and all(1 <= r <= 6 for r in result["rolls"])
    assert result["total"] == sum(result["rolls"])
    with pytest.raises(ValueError):
        roll_dice(sides=1)
    assert local_time("+02:00").endswith("+02:00")


def test_chat_streams_answers_and_shows_tool_calls(live_server_url, api_key):
    child = spawn_chat(live_server_url, api_key, "cli-user")
    try:
        child.expect_exact("tools: local_time, roll_dice")
        child.expect_exact("you> ")
        child.sendline("hello from the terminal")
        child.expect(r"\[thread\] (thr_\S+) \(resume it with --thread-id thr_\S+\)")
        child.expect_exact("assistant> (offline model) You said: hello from the terminal")
        child.expect_exact("you> ")

        child.sendline('roll_dice {"sides": 6, "count": 2}')
        child.expect_exact('[tool call] roll_dice({"sides": 6, "count": 2})')
        child.expect(r"\[tool result\] roll_dice: \{\"rolls\": \[\d, \d\], \"total\": \d+\}")
        child.expect(r"assistant> Tool roll_dice returned: \{\"rolls\"")
        child.expect_exact("you> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before


def test_ctrl_c_during_an_answer_stops_that_answer_and_keeps_the_session(live_server_url, api_key):
    child = spawn_chat(live_server_url, api_key, "cli-user")
    try:
        child.expect_exact("you> ")
        child.sendline("!slow please")
        child.expect(r"\[thread\] (thr_[A-Za-z0-9_-]+)")
        thread_id = child.match.group(1)
        child.expect_exact("A slow answer")

        child.sendintr()

        child.expect_exact("[cancelled] the answer was stopped")
        child.expect_exact("you> ")
        child.sendline("still here?")
        child.expect_exact("assistant> (offline model) You said: still here?")
        child.expect_exact("you> ")
        child.sendeof()
        child.expect_exact(f"[thread] {thread_id}")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    with Client(live_server_url, api_key, "cli-user") as client:
        [thread] = client.threads.list().threads
        assert thread.id == thread_id
        messages = client.threads.messages.list(thread.id).messages
        assert [m.role for m in messages] == ["user", "assistant", "user", "assistant"]
        assert messages[1].is_cancelled is True
        runs = [m for m in messages if m.role == "assistant"]
        assert "still here?" in runs[-1].content[0].text


def test_thread_id_resumes_a_conversation(live_server_url, api_key):
    with Client(live_server_url, api_key, "cli-user") as client:
        first = client.run("remember the word mango").result()
        thread_id = first.thread_id
    child = spawn_chat(live_server_url, api_key, "cli-user", "--thread-id", thread_id)
    try:
        child.expect_exact(f"[thread] {thread_id} (resumed)")
        child.expect_exact("you> ")
        child.sendline("and again")
        child.expect_exact("You said: and again")
        child.expect_exact("you> ")
        child.sendeof()
        child.expect(pexpect.EOF)
    finally:
        child.close()
    with Client(live_server_url, api_key, "cli-user") as client:
        assert len(client.threads.list().threads) == 1
        texts = [m.content[0].text for m in client.threads.messages.list(thread_id).messages if m.role == "user"]
        assert texts == ["remember the word mango", "and again"]


def test_chat_exits_cleanly_on_ctrl_c_at_the_prompt(live_server_url, api_key):
    child = spawn_chat(live_server_url, api_key, "cli-user-2")
    try:
        child.expect_exact("you> ")
        child.sendintr()
        child.expect_exact("bye")
        child.expect(pexpect.EOF)
    finally:
        child.close()
    assert child.exitstatus == 0
