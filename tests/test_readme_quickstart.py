"""The README's quick start, its first block run as written in a clean checkout (issue 35), read from
README.md itself so that the README cannot drift from the commands: `bin/serve` in a clean copy of
the checkout (it makes its own `.venv`), then the page's login with the printed demo login and a run
with the printed key. Only the port is chosen (`PORT`, which `bin/serve` reads), so that the server runs
beside anything else on the machine. `bin/test` is the command running this test: CI runs it from a
clean clone (.ci/run), so it is asserted to be there and not run again. The production block runs in
tests/test_install.py, on that module's one install.
"""
from __future__ import annotations

import os
import re
import signal
import subprocess

import requests

from tests.support.live import free_port
from tests.support.readme import answered, clean_checkout, newcomer_env, quick_start, stop, wait_for


def test_the_first_block_serves_the_page_and_a_run_from_a_clean_checkout(tmp_path):
    first, _ = quick_start()
    assert first == ["bin/serve", "bin/test"]
    checkout = clean_checkout(tmp_path / "checkout")
    port = free_port()
    log = tmp_path / "serve.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(["bash", "-c", first[0]], cwd=checkout, env=newcomer_env(PORT=str(port)),
                                   stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base, process, log)
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
