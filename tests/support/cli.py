"""The chat CLI (`python -m clientsdk chat`) in a pseudo-terminal, as a user runs it."""
from __future__ import annotations

import signal
import sys
from pathlib import Path

import pexpect

ROOT = Path(__file__).resolve().parents[2]


def _sigint_default() -> None:
    # A test run started in the background (`cmd &` in a script) inherits SIGINT ignored, and so would
    # the chat: Python installs its Ctrl-C handling only when SIGINT is not ignored at start. A user's
    # terminal has it on; so does the child here.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def spawn_chat(base_url: str, api_key: str, user_key: str, *extra: str) -> pexpect.spawn:
    """`python -m clientsdk chat` against `base_url`, in a pseudo-terminal."""
    return pexpect.spawn(
        sys.executable, ["-m", "clientsdk", "chat", "--base-url", base_url, "--api-key", api_key,
                         "--user-key", user_key, *extra],
        cwd=str(ROOT), encoding="utf-8", timeout=30, preexec_fn=_sigint_default,
    )
