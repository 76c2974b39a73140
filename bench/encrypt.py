"""`bin/bench encrypt [--runs 50] [--rounds 3]`: what content encrypted at rest costs a run
(docs/projects.md#content-encrypted-at-rest).

One server (SQLite, then PostgreSQL), two projects on it: one plain, one with `encryptContent`. Each
round runs the same conversations on both, one after the other (10 runs a thread, each run after
the first reading the thread's history back, `!stream 10` answers with a user message of about
1 KB), and reads the server process's CPU seconds around each; the table gives the medians of the
rounds per run, and the difference. Alternating the projects round by round keeps the machine's
load out of the difference as far as it can be.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys

import requests
from cryptography.fernet import Fernet

from bench.capacity import CONVERSATION, cpu_seconds, prepare, sqlite_env
from bench.run import ROOT, start
from tests.support.pg_cluster import PgCluster

WORDS = ("The quarterly figures for the northern region are attached; please compare them with last "
         "year's and tell me where the differences come from. ") * 8  # ~1 KB of user text a run


def _encrypting_key(env: dict[str, str]) -> str:
    """A second project with `encryptContent`, and its API key."""
    full = {**os.environ, **env, "LOG_LEVEL": "WARNING"}
    out = subprocess.run([sys.executable, "manage.py", "createapikey", "--project", "bench-encrypted"], cwd=ROOT,
                         env=full, check=True, capture_output=True, text=True).stdout
    subprocess.run([sys.executable, "manage.py", "shell", "-c",
                    "from projects.models import Project; from projects.config import ProjectSettings, "
                    "project_settings_save; project_settings_save(Project.objects.get(name='bench-encrypted'), "
                    "ProjectSettings(encrypt_content=True))"], cwd=ROOT, env=full, check=True)
    return out.split()[-1]


def _conversations(session: requests.Session, url: str, runs: int) -> None:
    thread, previous = None, None
    for i in range(runs):
        if i % CONVERSATION == 0:
            thread = previous = None
        body = {"userKey": "bench", "message": {"role": "user", "content": [
            {"type": "text", "text": f"!stream 10 {WORDS}"}]}}
        if previous:
            body["previousRunId"] = previous
        path = f"/v1/threads/{thread}/runs" if thread else "/v1/threads/runs"
        with session.post(url + path, json=body, stream=True, timeout=120) as response:
            response.raise_for_status()
            for _ in response.iter_lines():
                pass
            thread = response.headers.get("X-Thread-Id") or thread
            previous = response.headers["X-Run-Id"]


def encrypt(runs: int, rounds: int) -> None:
    print(f"\nencrypt: {rounds} rounds of {runs} runs per project (conversations of {CONVERSATION} runs, "
          "`!stream 10` answers, ~1 KB user messages), plain and encryptContent alternately")
    print(f"{'database':<11} {'plain CPU ms/run':>17} {'encrypted CPU ms/run':>21} {'difference':>11}")
    cluster = PgCluster(max_connections=100)
    try:
        for name, env in (("SQLite", sqlite_env()), ("PostgreSQL", {"DATABASE_URL": cluster.url})):
            env = {**env, "MODEL_PROVIDER": "offline", "OFFLINE_MODEL_DELAY": "0", "RUN_WATCH_INTERVAL": "60",
                   # The safe default of 60 runs a minute would stop the bench.
                   "LOG_LEVEL": "WARNING", "DEFAULT_RUNS_PER_MINUTE": "0",
                   "SECRETS_KEYS": Fernet.generate_key().decode()}
            keys = {"plain": prepare(env), "encrypted": _encrypting_key(env)}
            app, url = start("tambo_project.asgi:application", env)
            try:
                sessions = {}
                for kind, key in keys.items():
                    sessions[kind] = requests.Session()
                    sessions[kind].headers["x-api-key"] = key
                    _conversations(sessions[kind], url, CONVERSATION)  # warm-up
                cpu: dict[str, list[float]] = {"plain": [], "encrypted": []}
                for _ in range(rounds):
                    for kind in ("plain", "encrypted"):
                        before = cpu_seconds(app.pid)
                        _conversations(sessions[kind], url, runs)
                        cpu[kind].append((cpu_seconds(app.pid) - before) / runs * 1000)
                plain, sealed = statistics.median(cpu["plain"]), statistics.median(cpu["encrypted"])
                print(f"{name:<11} {plain:>17.2f} {sealed:>21.2f} {sealed - plain:>+11.2f}")
            finally:
                app.terminate(), app.wait()
            subprocess.run([sys.executable, "manage.py", "shell", "-c", "from bench.encrypt import direct; direct()"],
                           cwd=ROOT, env={**os.environ, **env}, check=True)
    finally:
        cluster.stop()
    print("CPU is the server process's user+system time over the runs (the client is another process); "
          "`direct` is the keyring's own work for the last run of a 10-run conversation, timed alone.")


def direct(repeat: int = 200) -> None:
    """Inside the server's code (`manage.py shell`): the encryption work of one run, timed alone on the
    stored rows of the last conversation of the encrypting project. A run on a thread with history
    decrypts every stored message once (its history), encrypts its two new messages (the user's and
    the answer) and each event the event log takes."""
    import json
    import time

    from runs.models import Run, RunEvent
    from threads.models import Message, Thread
    from threads.sealing import open_json, open_text, seal_json, seal_text

    thread = Thread.objects.filter(project__name="bench-encrypted").order_by("-created_at").first()
    messages = list(Message.objects.filter(thread=thread).values_list("content", flat=True))
    run = Run.objects.filter(thread=thread).order_by("-created_at").first()
    events = [open_text(e) for e in RunEvent.objects.filter(run_id=run.id).values_list("data", flat=True)]
    stored = [seal_json(m).envelope for m in messages]
    began = time.process_time()
    for _ in range(repeat):
        for value in stored:
            open_json(value)
        for m in messages[-2:]:
            seal_json(m)
        for e in events:
            seal_text(e, True)
    per_run = (time.process_time() - began) / repeat * 1000
    print(f"  direct: {per_run:.2f} ms/run ({len(messages)} messages of "
          f"{sum(len(json.dumps(m)) for m in messages) // max(1, len(messages))} bytes read, 2 written, "
          f"{len(events)} events logged)")
