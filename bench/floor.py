"""`bin/bench floor`: one run's cost beside the floor, a bare ASGI app under the same uvicorn.

For SQLite and PostgreSQL: N sequential runs of `!stream 10` (offline model, no delay) through the
app, then the same N requests to bench/baseline_app.py, which writes the exact frames the app's last
run wrote and does nothing else. For both it prints the server's CPU per run (user + system, from
/proc, split into the event-loop thread and the others: the database workers and Django's
per-request threads), the time to the first event (RUN_STARTED for the app) and the ratio.
Targets (issue 27): CPU per run <= 5 ms on SQLite, <= 6 ms on PostgreSQL; RUN_STARTED <= 8 ms idle.
"""
from __future__ import annotations

import json
import os
import statistics
import tempfile
from pathlib import Path

import requests

from bench.capacity import prepare, run_body, sqlite_env
from bench.run import measure, start
from tests.support.pg_cluster import PgCluster

_TICK = os.sysconf("SC_CLK_TCK")


def thread_cpu(pid: int) -> dict[str, float]:
    """CPU seconds of each thread of `pid` (threads that ended are not counted: see `process_cpu`)."""
    out = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        out[task.name] = (int(fields[11]) + int(fields[12])) / _TICK
    return out


def process_cpu(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def _series(url: str, path: str, key: str | None, runs: int, pid: int) -> dict:
    session = requests.Session()
    if key:
        session.headers["x-api-key"] = key
    body = run_body("!stream 10")
    for _ in range(5):
        measure(session, url + path, body)  # warm-up
    before, threads_before = process_cpu(pid), thread_cpu(pid)
    samples = [measure(session, url + path, body) for _ in range(runs)]
    cpu, threads_after = process_cpu(pid) - before, thread_cpu(pid)
    loop = threads_after.get(str(pid), 0.0) - threads_before.get(str(pid), 0.0)
    return {"cpu": cpu / runs * 1000, "loop": loop / runs * 1000, "others": (cpu - loop) / runs * 1000,
            "first": statistics.median(s[0] for s in samples) * 1000, "frames": samples[-1][3]}


def floor(runs: int) -> None:
    print(f"\nfloor: {runs} sequential runs of `!stream 10`, the app beside a bare ASGI app writing the same frames")
    print(f"{'':<22} {'CPU ms/run':>10} {'event loop':>10} {'others':>7} {'first event ms':>15}")
    cluster = PgCluster(max_connections=100)
    workdir = Path(tempfile.mkdtemp(prefix="tambo-floor-"))
    try:
        for name, env in (("SQLite", sqlite_env()), ("PostgreSQL", {"DATABASE_URL": cluster.url})):
            env = {**env, "MODEL_PROVIDER": "offline", "OFFLINE_MODEL_DELAY": "0", "RUN_WATCH_INTERVAL": "60"}
            key = prepare(env)
            app, url = start("tambo_project.asgi:application", env)
            try:
                real = _series(url, "/v1/threads/runs", key, runs, app.pid)
            finally:
                app.terminate(), app.wait()
            frames = workdir / f"frames-{name}.json"
            frames.write_text(json.dumps(real["frames"]))
            bare_proc, bare_url = start("bench.baseline_app:app", {"BENCH_FRAMES_FILE": str(frames)})
            try:
                bare = _series(bare_url, "/run", None, runs, bare_proc.pid)
            finally:
                bare_proc.terminate(), bare_proc.wait()
            for label, row in ((f"{name} app", real), (f"{name} floor", bare)):
                print(f"{label:<22} {row['cpu']:>10.2f} {row['loop']:>10.2f} {row['others']:>7.2f} {row['first']:>15.2f}")
            print(f"{name + ' ratio app/floor':<22} {real['cpu'] / max(bare['cpu'], 1e-9):>10.1f} "
                  f"{'':>10} {'':>7} {real['first'] / max(bare['first'], 1e-9):>15.1f}   "
                  f"({len(real['frames'])} events per run)")
    finally:
        cluster.stop()
    print("CPU: the server process's user+system time over the runs, from /proc (the client is another "
          "process); 'others' = database worker threads and Django's per-request threads.")
