"""The README's quick start, its first block run as written in a clean checkout (issue 35), read from
README.md itself so that the README cannot drift from the commands: `bin/serve` in a clean copy of
the checkout (it makes its own `.venv`), then the page's login with the printed demo login and a run
with the printed key. Only the port is chosen (`PORT`, which `bin/serve` reads), so that the server runs
beside anything else on the machine. `bin/test` is the command running this test: CI runs it from a
clean clone (.ci/run), so it is asserted to be there and not run again. The production block runs in
tests/test_install.py, on that module's one install.

The same first start is the one that makes the installation's SECRET_KEY (var/secret_key), kept at the
next start: one clean checkout and one install for both (each costs half a minute).
"""
from __future__ import annotations

import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

import pytest
import requests

from tests.support.live import free_port
from tests.support.readme import answered, clean_checkout, newcomer_env, quick_start, stop, wait_for


@dataclass
class Served:
    checkout: Path
    base: str
    log: Path
    process: subprocess.Popen


def _serve(checkout: Path, log: Path) -> Served:
    first, _ = quick_start()
    port = free_port()
    with open(log, "wb") as out:
        process = subprocess.Popen(["bash", "-c", first[0]], cwd=checkout, env=newcomer_env(PORT=str(port)),
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    served = Served(checkout, f"http://127.0.0.1:{port}", log, process)
    try:
        wait_for(served.base, process, log)
    except BaseException:
        stop(process, signal.SIGKILL)
        raise
    return served


@pytest.fixture(scope="module")
def first_start(tmp_path_factory) -> Iterator[Served]:
    """The first block's first command in a clean checkout, serving; stopped by the tests (or at the end)."""
    work = tmp_path_factory.mktemp("quickstart")
    served = _serve(clean_checkout(work / "checkout"), work / "serve.log")
    yield served
    stop(served.process, signal.SIGINT)


def test_the_first_block_serves_the_page_and_a_run_from_a_clean_checkout(first_start):
    first, _ = quick_start()
    assert first == ["bin/serve", "bin/test"]
    checkout, base, log, process = first_start.checkout, first_start.base, first_start.log, first_start.process
    try:
        banner = log.read_text(errors="replace")
        # What the README says the first start prints: the page's URL, a demo API key and a login.
        assert f"Chat page:  {base}/" in banner, banner[-3000:]
        key = re.search(r"API key \(shown once\): (\S+)", banner).group(1)
        user, password = re.search(r"Demo login \(admin too\): (\S+) / (\S+)", banner).groups()
        assert "You said: hello" in answered(base, key)
        session = requests.Session()
        login = session.get(base + "/login/", timeout=10)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', login.text).group(1)
        signed_in = session.post(base + "/login/", data={"username": user, "password": password,
                                                         "csrfmiddlewaretoken": token},
                                 headers={"Referer": base + "/login/"}, timeout=10)
        assert signed_in.status_code == 200 and signed_in.url.rstrip("/") == base, signed_in.url
    finally:
        code = stop(process, signal.SIGINT)
    assert code == 0, log.read_text(errors="replace")[-3000:]
    assert (checkout / ".venv" / "bin" / "python").exists() and (checkout / "var" / "db.sqlite3").exists()
    assert "Traceback" not in log.read_text(errors="replace")
    assert os.access(checkout / first[1], os.X_OK)


def test_bin_serve_makes_a_random_secret_key_on_first_start_and_keeps_it(first_start, tmp_path):
    stop(first_start.process, signal.SIGINT)
    key_file = first_start.checkout / "var" / "secret_key"
    first = key_file.read_text().strip()
    assert len(first) >= 50 and first != "dev-only-insecure-key-change-me"
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    assert "Demo login" in first_start.log.read_text(errors="replace")  # development: bin/serve asks for the login

    again = _serve(first_start.checkout, tmp_path / "serve-again.log")
    assert stop(again.process, signal.SIGINT) == 0, again.log.read_text(errors="replace")[-3000:]
    assert key_file.read_text().strip() == first
