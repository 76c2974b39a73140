"""`python -m clientsdk chat`, driven in a pseudo-terminal against the live server."""
from __future__ import annotations

import sys
import time
from pathlib import Path

import pexpect
import pytest

from clientsdk import Client
from clientsdk.cli import local_time, roll_dice

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.django_db(transaction=True)


def spawn_chat(base_url: str, api_key: str, user_key: str) -> pexpect.spawn:
    """`python -m clientsdk chat` against `base_url`, in a pseudo-terminal."""
    return pexpect.spawn(
        sys.executable, ["-m", "clientsdk", "chat", "--base-url", base_url, "--api-key", api_key,
                         "--user-key", user_key],
        cwd=str(ROOT), encoding="utf-8", timeout=30,
    )


def test_roll_dice_and_local_time_are_real_tools():
    result = roll_dice(sides=6, count=3)
    assert len(result["rolls"]) == 3 and all(1 <= r <= 6 for r in result["rolls"])
    assert result["total"] == sum(result["rolls"])
    with pytest.raises(ValueError):
        roll_dice(sides=1)
    assert local_time("+02:00").endswith("+02:00")


def test_chat_streams_answers_shows_tool_calls_and_exits_on_ctrl_c(live_server_url, api_key):
    child = spawn_chat(live_server_url, api_key, "cli-user")
    try:
        child.expect_exact("tools: local_time, roll_dice")
        child.expect_exact("you> ")
        child.sendline("hello from the terminal")
        child.expect_exact("assistant> (offline model) You said: hello from the terminal")
        child.expect_exact("you> ")

        child.sendline('roll_dice {"sides": 6, "count": 2}')
        child.expect_exact('[tool call] roll_dice({"sides": 6, "count": 2})')
        child.expect(r"\[tool result\] roll_dice: \{\"rolls\": \[\d, \d\], \"total\": \d+\}")
        child.expect(r"assistant> Tool roll_dice returned: \{\"rolls\"")
        child.expect_exact("you> ")

        child.sendline("!slow please")
        child.expect_exact("A slow answer")
        started = time.monotonic()
        child.sendintr()
        child.expect_exact("[cancelled] bye")
        child.expect(pexpect.EOF)
        assert time.monotonic() - started < 10
    finally:
        child.close()
    assert child.exitstatus == 0, child.before

    with Client(live_server_url, api_key, "cli-user") as client:
        [thread] = client.threads.list().threads
        deadline = time.monotonic() + 5
        while thread.run_status != "idle" and time.monotonic() < deadline:
            time.sleep(0.1)
            thread = client.threads.retrieve(thread.id)
        assert thread.run_status == "idle" and thread.last_run_cancelled is True
        assert len(client.threads.messages.list(thread.id).messages) >= 6


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
