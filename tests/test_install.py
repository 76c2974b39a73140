"""Installing the checkout as a newcomer would: the README's production block (its one `pip install`
into a fresh virtualenv, read from README.md and run as written), then the installed `tambo-server`
command run from an empty directory (docs/deployment.md).

Slow (a fresh install resolves every dependency; the first `serve` compresses the static files), so
every test here shares one install.
"""
from __future__ import annotations

import json
import re
import secrets
import signal
import subprocess
import uuid
from pathlib import Path

import psycopg
import pytest
import requests
from django.conf import settings

from tests.support.live import free_port
from tests.support.readme import ROOT, answered, filled, newcomer_env, quick_start, stop, wait_for
from tests.support.sse import read_events


def build_output() -> set[Path]:
    """What a build could leave in the checkout: build/ folders and *.egg-info, at the two roots."""
    return {p for folder in (ROOT, ROOT / "clientsdk") for p in folder.iterdir()
            if p.name == "build" or p.name.endswith(".egg-info")}


@pytest.fixture(scope="module")
def installed(tmp_path_factory) -> tuple[Path, dict[str, str]]:
    """(an empty directory, the environment that runs the install's `tambo-server` there), installed by
    the first line of the README's production block, in the checkout, with its path filled in."""
    work = tmp_path_factory.mktemp("install")
    venv = work / "venv"
    _, production = quick_start()
    install = filled(production[0], {"/opt/tambo": str(venv)})
    assert install == f"python3.11 -m venv {venv} && {venv}/bin/pip install .", install
    before = build_output()
    result = subprocess.run(["bash", "-ec", install], cwd=ROOT, env=newcomer_env(), capture_output=True,
                            text=True, timeout=1500)
    assert result.returncode == 0, result.stderr[-3000:]
    assert build_output() == before
    empty = work / "empty"
    empty.mkdir()
    env = newcomer_env()
    env["PATH"] = f"{venv / 'bin'}:{env.get('PATH', '')}"
    return empty, env


def tambo_server(installed, *args: str, **env: str) -> subprocess.CompletedProcess:
    cwd, base = installed
    return subprocess.run(["tambo-server", *args], cwd=cwd, env={**base, **env}, capture_output=True, text=True,
                          timeout=300)


def test_one_pip_install_brings_every_package_and_the_client_from_the_checkout_not_an_index(installed):
    _, env = installed
    # Every top-level package of the checkout (pyproject.toml's `packages.find` must list a new one).
    packages = sorted(p.parent.name for p in ROOT.glob("*/__init__.py") if p.parent.name not in ("tests", "bench"))
    assert {"clientsdk", "tambo_project", "runs"} <= set(packages)
    code = "import importlib\nfor name in %r: print(importlib.import_module(name).__file__)" % (packages,)
    site = subprocess.run(["python", "-c", code], env=env, cwd=installed[0], capture_output=True, text=True,
                          check=True).stdout.split()
    assert len(site) == len(packages)
    assert all(path.startswith(str(installed[0].parent / "venv")) for path in site), site
    site = [path for path in site if "/clientsdk/" in path]
    [direct_url] = (Path(site[0]).parents[1]).glob("tambo_clientsdk-*.dist-info/direct_url.json")
    assert json.loads(direct_url.read_text())["url"] == (ROOT / "clientsdk").as_uri()


def test_serve_refuses_to_start_without_a_secret_key_and_names_it(installed):
    result = tambo_server(installed, "serve", "--port", str(free_port()))
    assert result.returncode != 0
    assert "SECRET_KEY" in result.stderr


def test_migrate_createapikey_and_serve_from_an_empty_directory(installed):
    cwd, _ = installed
    secret = {"SECRET_KEY": "test-install-" + "x" * 40}
    migrated = tambo_server(installed, "migrate", "--noinput", **secret)
    assert migrated.returncode == 0, migrated.stderr
    assert (cwd / "var" / "db.sqlite3").exists()  # the zero-configuration database, in this directory
    created = tambo_server(installed, "createapikey", "--project", "installed", **secret)
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip().splitlines()[-1]
    users = tambo_server(installed, "shell", "-c",
                         "from django.contrib.auth.models import User; print(User.objects.count())", **secret)
    assert users.stdout.splitlines()[-1] == "0"  # no demo user, no superuser: serve creates none either

    port = free_port()
    log_path = cwd / "serve.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(["tambo-server", "serve", "--port", str(port)], cwd=cwd,
                                   env={**installed[1], **secret}, stdout=log, stderr=subprocess.STDOUT)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base, process, log_path, attempts=600)
        page = requests.get(base + "/login/", timeout=10)
        assert page.status_code == 200 and "<form" in page.text
        # The page links its files by content-hashed names, which browsers may keep for ever.
        css = re.search(r'href="(/static/tambo/[^"]+\.[0-9a-f]{12}\.css)"', page.text).group(1)
        served = requests.get(base + css, headers={"Accept-Encoding": "gzip"}, timeout=10)
        assert served.status_code == 200
        assert "immutable" in served.headers["Cache-Control"]
        assert served.headers["Content-Encoding"] == "gzip"
        docs = requests.get(base + "/v1/docs", timeout=10)
        assert docs.status_code == 200 and "redoc" in docs.text.lower()
        body = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "hello"}]}}
        answer = requests.post(base + "/v1/threads/runs", json=body, headers={"x-api-key": key}, stream=True,
                               timeout=60)
        assert answer.status_code == 200
        events = read_events(answer)
        assert events[-1]["type"] == "RUN_FINISHED"
        assert "You said: hello" in "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=60)
    log_text = log_path.read_text(errors="replace")
    # The access log is on, one line per request: the server's own, not uvicorn's as well.
    assert log_text.count("tambo.access: request method=POST path=/v1/threads/runs ") == 1, log_text[-3000:]
    assert "HTTP/1.1\" 200" not in log_text
    for bad in ("Traceback", " ERROR ", "ERROR:"):  # the two log formats' level (Django's, uvicorn's)
        assert bad not in log_text, log_text[-3000:]
    after = tambo_server(installed, "shell", "-c", "from django.contrib.auth.models import User; "
                         "print(User.objects.count())", **secret)
    assert after.stdout.splitlines()[-1] == "0"


def test_the_readme_production_block_migrates_makes_a_key_and_serves_two_workers_on_postgresql(installed):
    """The rest of the README's production block, as written after its install line (which made this
    module's install), on a PostgreSQL database of its own. Filled in: the install path, the `…` of
    `SECRET_KEY` and `DATABASE_URL`, and the port (`PORT`, which `serve` reads)."""
    if settings.DATABASES["default"]["ENGINE"].endswith("sqlite3"):
        pytest.fail("this test runs in the PostgreSQL pass: the block's DATABASE_URL is PostgreSQL")
    cwd, env = installed
    venv = cwd.parent / "venv"
    db = settings.DATABASES["default"]
    server = dict(user=db["USER"], password=db.get("PASSWORD") or "", host=db["HOST"], port=db["PORT"])
    database = f"readme_{uuid.uuid4().hex[:8]}"
    with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
        admin.execute(f'CREATE DATABASE "{database}"')
    url = f"postgres://{server['user']}:{server['password']}@{server['host']}:{server['port']}/{database}"
    fill = {"/opt/tambo": str(venv), "SECRET_KEY=…": f"SECRET_KEY={secrets.token_urlsafe(50)}",
            "DATABASE_URL=postgres://…": f"DATABASE_URL={url}"}
    _, production = quick_start()
    *setup, serve = [filled(line, fill) for line in production[1:]]
    assert serve == f"{venv}/bin/tambo-server serve --workers 2", serve
    port = free_port()
    env = {**env, "PORT": str(port)}
    # The lines in one shell, as a reader pastes them (the export carries to the lines after it).
    done = subprocess.run(["bash", "-ec", "\n".join(setup + ['env | grep -E "^(SECRET_KEY|DATABASE_URL)=" > exported'])],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, (done.stdout[-2000:], done.stderr[-3000:])
    key = done.stdout.strip().splitlines()[-1]  # createapikey prints the key last
    exported = dict(line.split("=", 1) for line in (cwd / "exported").read_text().splitlines())
    log = cwd / "serve-readme.log"
    with open(log, "wb") as out:
        process = subprocess.Popen(["bash", "-c", serve], cwd=cwd, env={**env, **exported}, stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for(base, process, log)
        assert "You said: hello" in answered(base, key)
        # `--workers 2`: two worker processes of this install's Python (uvicorn spawns them).
        workers = subprocess.run(["pgrep", "-f", "-c", f"^{venv}/bin/python.* -c from multiprocessing.spawn"],
                                 capture_output=True, text=True)
        assert workers.stdout.strip() == "2", workers
    finally:
        code = stop(process, signal.SIGTERM)
        with psycopg.connect(dbname="postgres", autocommit=True, **server) as admin:
            admin.execute(f'DROP DATABASE IF EXISTS "{database}" WITH (FORCE)')
    assert code == 0, log.read_text(errors="replace")[-3000:]
    assert "Traceback" not in log.read_text(errors="replace")
