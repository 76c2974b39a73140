"""Capacity benchmarks (docs/protocol.md#design-for-scale): `bin/bench pipeline | concurrency N | per-run`.

Not tests: they print numbers for the table of docs/benchmarks.md. Each starts what it needs and stops it:
the app under uvicorn (a subprocess), a throwaway PostgreSQL cluster (tests/support/pg_cluster.py,
default max_connections=100) and/or a SQLite file, and the repository's fake OpenAI server in its
own process.

- pipeline: one 5,000-delta answer from the fake OpenAI server, read directly (requests + json, and
  the `openai` client) and through the app (requests + json on its SSE): deltas per second.
- pipeline --streams N [--deltas D]: N answers of D deltas streamed together, read directly by N
  concurrent readers, then through the app by N concurrent runs (one aiohttp client, orjson, in this
  process): the throughput ratio, and the server's CPU per delta.
- concurrency N: N paced runs started together (offline model): failures, RUN_STARTED p50/p95,
  server CPU seconds (all its processes), the load generator's CPU, peak RSS, peak database
  connections, whether every stream got all its text; `--workers`, `--pin` (taskset) and `--rounds`.
- per-run: server CPU per run for 10-delta answers, SQL statements per run (PostgreSQL statement
  log), time to RUN_STARTED on an idle server; on SQLite and PostgreSQL.
"""
from __future__ import annotations

import asyncio
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from bench.run import ROOT, start
from tests.support.many_streams import Sampler, run_streams
from tests.support.pg_cluster import PgCluster

DELTAS = 5000
_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def thread_count(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("Threads:"):
            return int(line.split()[1])
    return 0


def peak_rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return 0.0


def sqlite_env() -> dict[str, str]:
    workdir = Path(tempfile.mkdtemp(prefix="tambo-bench-"))
    return {"SQLITE_PATH": str(workdir / "db.sqlite3"), "DATABASE_URL": f"sqlite:///{workdir / 'db.sqlite3'}"}


def prepare(env: dict[str, str]) -> str:
    """Migrates the database named by env and returns a new API key."""
    full = {**os.environ, **env, "LOG_LEVEL": "WARNING"}
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=full, check=True)
    out = subprocess.run([sys.executable, "manage.py", "createapikey", "--project", "bench"], cwd=ROOT, env=full,
                         check=True, capture_output=True, text=True).stdout
    return out.split()[-1]


def run_body(text: str, user: str = "bench") -> dict:
    return {"userKey": user, "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def read_run(session: requests.Session, url: str, body: dict) -> tuple[float, float, str, str]:
    """(seconds to RUN_STARTED, seconds to the end, the text, the last event type)."""
    began = time.perf_counter()
    started, parts, last = 0.0, [], ""
    with session.post(url, json=body, stream=True, timeout=120) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith(b"data:"):
                continue
            event = json.loads(line[5:])
            last = event["type"]
            if last == "RUN_STARTED":
                started = time.perf_counter() - began
            elif last == "TEXT_MESSAGE_CONTENT":
                parts.append(event["delta"])
    return started, time.perf_counter() - began, "".join(parts), last


# --- pipeline ----------------------------------------------------------------------------------------

def start_fake(deltas: int) -> tuple[subprocess.Popen, str]:
    code = ("import sys, time\n"
            "from tests.support.fake_openai import FakeOpenAI, Text, _Server\n"
            # socketserver's listen backlog of 5 would drop the SYNs of many readers connecting at once.
            "_Server.request_queue_size = 1024\n"
            f"fake = FakeOpenAI(Text([f'w{{i}} ' for i in range({deltas})])).start()\n"
            "print(fake.base_url, flush=True)\n"
            "time.sleep(3600)\n")
    proc = subprocess.Popen([sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    return proc, proc.stdout.readline().strip()


def direct_requests(base_url: str) -> tuple[float, int]:
    body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}
    began, count = time.perf_counter(), 0
    with requests.post(base_url + "/chat/completions", json=body, stream=True, timeout=60,
                       headers={"Authorization": "Bearer k"}) as response:
        for line in response.iter_lines():
            if line.startswith(b"data: ") and line != b"data: [DONE]":
                chunk = json.loads(line[6:])
                for choice in chunk.get("choices") or ():
                    if (choice.get("delta") or {}).get("content"):
                        count += 1
    return time.perf_counter() - began, count


def direct_openai(base_url: str) -> tuple[float, int]:
    import openai

    client = openai.OpenAI(base_url=base_url, api_key="k", max_retries=0)
    began, count = time.perf_counter(), 0
    for chunk in client.chat.completions.create(model="m", stream=True, messages=[{"role": "user", "content": "hi"}]):
        if chunk.choices and chunk.choices[0].delta.content:
            count += 1
    return time.perf_counter() - began, count


def pipeline(repeat: int) -> None:
    fake, base_url = start_fake(DELTAS)
    env = {**sqlite_env(), "MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "k"}
    key = prepare(env)
    app, url = start("tambo_project.asgi:application", env)
    try:
        session = requests.Session()
        session.headers["x-api-key"] = key
        rows = {"requests + json, direct": [], "openai client, direct": [], "through the server": []}
        expected = "".join(f"w{i} " for i in range(DELTAS))
        server_cpu: list[float] = []  # the server process's CPU seconds per answer (/proc): load-proof-ish
        for _ in range(repeat + 1):  # the first round warms up and is dropped
            rows["requests + json, direct"].append(direct_requests(base_url))
            rows["openai client, direct"].append(direct_openai(base_url))
            before = cpu_seconds(app.pid)
            _, seconds, text, last = read_run(session, url + "/v1/threads/runs", run_body("hi"))
            server_cpu.append(cpu_seconds(app.pid) - before)
            assert text == expected and last == "RUN_FINISHED", (len(text), last)
            rows["through the server"].append((seconds, DELTAS))
        direct = statistics.median(s for s, _ in rows["requests + json, direct"][1:])
        print(f"\npipeline: one {DELTAS}-delta answer from the fake OpenAI server (median of {repeat})")
        print(f"{'path':<28} {'seconds':>8} {'deltas/s':>9} {'vs direct':>9}")
        for name, samples in rows.items():
            seconds = statistics.median(s for s, _ in samples[1:])
            print(f"{name:<28} {seconds:>8.3f} {DELTAS / seconds:>9.0f} {direct / seconds:>9.2f}")
        print(f"server CPU per delta (median): {statistics.median(server_cpu[1:]) / DELTAS * 1e6:.1f} µs")
    finally:
        app.terminate(), app.wait()
        fake.terminate(), fake.wait()


def pipeline_streams(streams: int, deltas: int, repeat: int) -> None:
    """`streams` answers of `deltas` deltas at once: read directly by as many readers, and through the
    app by as many runs; throughput (deltas per second over all streams) and the ratio of the two."""
    fake, base_url = start_fake(deltas)
    env = {**sqlite_env(), "MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": base_url, "OPENAI_API_KEY": "k"}
    key = prepare(env)
    app, url = start("tambo_project.asgi:application", env)
    expected = "".join(f"w{i} " for i in range(deltas))
    try:
        direct_rounds, server_rounds, server_cpu, events = [], [], [], []
        for _ in range(repeat + 1):  # the first round warms up and is dropped
            seconds, texts, _ = asyncio.run(_read_streams(base_url + "/chat/completions", _direct_body, {}, streams,
                                                          _direct_text))
            assert texts == [expected] * streams, "a direct reader missed text"
            direct_rounds.append(seconds)
            before = cpu_seconds(app.pid)
            seconds, texts, counts = asyncio.run(_read_streams(url + "/v1/threads/runs", _run_body,
                                                               {"x-api-key": key}, streams, _run_text))
            events += counts
            server_cpu.append(cpu_seconds(app.pid) - before)
            assert texts == [expected] * streams, "a run's stream missed text"
            server_rounds.append(seconds)
        total = streams * deltas
        direct, server = statistics.median(direct_rounds[1:]), statistics.median(server_rounds[1:])
        print(f"\npipeline --streams {streams}: {streams} answers of {deltas} deltas at once from the fake OpenAI "
              f"server (median of {repeat}; one aiohttp client)")
        print(f"{'path':<28} {'seconds':>8} {'deltas/s':>9} {'vs direct':>9}")
        print(f"{'direct readers':<28} {direct:>8.3f} {total / direct:>9.0f} {1:>9.2f}")
        print(f"{'through the server (runs)':<28} {server:>8.3f} {total / server:>9.0f} {direct / server:>9.2f}")
        print(f"server CPU per delta (median): {statistics.median(server_cpu[1:]) / total * 1e6:.1f} µs "
              f"({statistics.median(server_cpu[1:]):.2f} s per round)")
        print(f"text events per {deltas}-delta answer through the server: median {statistics.median(events):.0f}, "
              f"min {min(events)}, max {max(events)}")
    finally:
        app.terminate(), app.wait()
        fake.terminate(), fake.wait()


def _direct_body(i: int) -> dict:
    return {"model": "m", "stream": True, "messages": [{"role": "user", "content": "hi"}]}


def _run_body(i: int) -> dict:
    return run_body("hi", user=f"bench-{i}")


def _direct_text(event: dict) -> str | None:
    for choice in event.get("choices") or ():
        return (choice.get("delta") or {}).get("content")
    return None


def _run_text(event: dict) -> str | None:
    return event["delta"] if event.get("type") == "TEXT_MESSAGE_CONTENT" else None


async def _read_streams(url: str, body, headers: dict, n: int, text_of) -> tuple[float, list[str], list[int]]:
    """(seconds until all `n` streams of `url` have ended, each stream's text, each stream's events that
    carried text): `n` POSTs at once, each answer's SSE split into lines and every event parsed, as a
    client would."""
    import aiohttp
    import orjson

    async def one(session: aiohttp.ClientSession, i: int) -> tuple[str, int]:
        parts: list[str] = []
        async with session.post(url, json=body(i), headers=headers) as response:
            response.raise_for_status()
            rest = b""
            async for block in response.content.iter_any():
                lines = (rest + block).split(b"\n")
                rest = lines.pop()
                for line in lines:
                    if line.startswith(b"data: ") and line != b"data: [DONE]":
                        text = text_of(orjson.loads(line[6:]))
                        if text:
                            parts.append(text)
        return "".join(parts), len(parts)

    connector = aiohttp.TCPConnector(limit=0)
    async with aiohttp.ClientSession(connector=connector, timeout=aiohttp.ClientTimeout(total=600)) as session:
        began = time.perf_counter()
        results = await asyncio.gather(*(one(session, i) for i in range(n)))
        return time.perf_counter() - began, [text for text, _ in results], [count for _, count in results]


# --- concurrency -------------------------------------------------------------------------------------

def tree_pids(pid: int) -> list[int]:
    """`pid` and its descendants (uvicorn's worker processes), from /proc."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry.name))
    found, todo = [], [pid]
    while todo:
        found.append(todo.pop())
        todo.extend(children.get(found[-1], ()))
    return found


def tree_cpu_seconds(pid: int) -> float:
    total = 0.0
    for each in tree_pids(pid):
        try:
            total += cpu_seconds(each)
        except OSError:
            pass  # a process that just ended
    return total


def client_cpu_seconds() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def concurrency(n: int, delay: float, pool: int, workers: int = 1, pin: bool = False, rounds: int = 1) -> None:
    """`rounds` bursts of `n` runs started together on one server (`workers` uvicorn processes). With
    `pin`, the server runs on CPU 1 and this process (the load generator) and PostgreSQL on CPU 0."""
    if pin and (os.cpu_count() or 1) < 2:
        raise SystemExit("--pin needs two CPUs")
    affinity = os.sched_getaffinity(0)
    if pin:
        os.sched_setaffinity(0, {0})  # PostgreSQL, started below, inherits it
    cluster = PgCluster(max_connections=100)
    rows = []
    try:
        env = {"DATABASE_URL": cluster.url, "MODEL_PROVIDER": "offline", "OFFLINE_MODEL_DELAY": str(delay),
               "DB_POOL_SIZE": str(pool)}
        if workers > 1:  # as bin/serve does: the processes' metrics through files
            env["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="tambo-bench-prom-")
        key = prepare(env)
        app, url = start("tambo_project.asgi:application", env, args=("--workers", str(workers)),
                         wrap=("taskset", "-c", "1") if pin else ())
        try:
            for i in range(rounds):
                if i:
                    # The burst before has ended; its memory is given back a second after its last
                    # stream closes (core/memory.py): the next starts on a settled server.
                    time.sleep(3)
                rows.append(_burst(app.pid, url, key, n, cluster))
            rss = sum(peak_rss_mb(pid) for pid in tree_pids(app.pid))
        finally:
            app.terminate(), app.wait()
    finally:
        cluster.stop()
        os.sched_setaffinity(0, affinity)
    print(f"\nconcurrency: {n} runs started together, offline model {delay}s between deltas, "
          f"PostgreSQL max_connections=100, DB_POOL_SIZE={pool}, {workers} worker process(es), "
          + ("pinned: server on CPU 1, load generator and PostgreSQL on CPU 0" if pin else "not pinned"))
    for i, row in enumerate(rows, 1):
        print(f"round {i}: failures {row['failures']}; RUN_STARTED p50 {row['p50']:.0f} ms, p95 {row['p95']:.0f} ms; "
              f"server CPU {row['cpu']:.2f} s ({row['cpu'] / n * 1000:.1f} ms/run); "
              f"load generator CPU {row['client_cpu']:.2f} s; peak DB connections {row['connections']:.0f}; "
              f"peak server threads {row['threads']:.0f}; streams open at once {row['overlap']}; "
              f"all text delivered: {row['complete']}; wall {row['wall']:.1f} s")
        if row["failed"]:
            print("  failed:", row["failed"])
    if rounds > 1:
        print(f"median of {rounds} rounds: RUN_STARTED p50 {statistics.median(r['p50'] for r in rows):.0f} ms, "
              f"p95 {statistics.median(r['p95'] for r in rows):.0f} ms; server CPU "
              f"{statistics.median(r['cpu'] for r in rows) / n * 1000:.1f} ms/run")
    print(f"peak RSS of the server's processes {rss:.0f} MB; load average {os.getloadavg()[0]:.2f} at the end")


def _burst(pid: int, url: str, key: str, n: int, cluster: PgCluster) -> dict:
    pids = tree_pids(pid)  # once: reading all of /proc 20 times a second would load the load generator
    before, client_before = tree_cpu_seconds(pid), client_cpu_seconds()
    with Sampler(cluster.client_connections) as connections, \
            Sampler(lambda: sum(thread_count(p) for p in pids)) as threads:
        began = time.perf_counter()
        results, overlap = asyncio.run(run_streams(url, key, n, "hello"))
        wall = time.perf_counter() - began
    # The load generator's CPU includes the two samplers' (a PostgreSQL connection every 50 ms).
    cpu, client_cpu = tree_cpu_seconds(pid) - before, client_cpu_seconds() - client_before
    finished = [r for r in results if r.finished]
    started = sorted(r.run_started_after for r in results if r.run_started_after is not None)
    failed = next((f"{r.status} {r.error or r.events[-3:]}" for r in results if not r.finished), None)
    return {"failures": n - len(finished), "failed": failed, "cpu": cpu, "client_cpu": client_cpu, "wall": wall,
            "p50": statistics.median(started) * 1000 if started else float("nan"),
            "p95": started[int(len(started) * 0.95) - 1] * 1000 if started else float("nan"),
            "connections": connections.peak, "threads": threads.peak, "overlap": overlap.peak,
            "complete": len({r.text for r in finished}) == 1 and len(finished) == n}


# --- per run -----------------------------------------------------------------------------------------

CONVERSATION = 10  # runs per thread in per-run's "existing thread" series: a short conversation


def conversation_run(session: requests.Session, url: str, thread: str | None, previous: str | None
                     ) -> tuple[float, str, str]:
    """One `!stream 10` run, on a new thread or after `previous` on `thread`: (seconds to RUN_STARTED,
    the thread's id, the run's id)."""
    body = run_body("!stream 10")
    if previous:
        body["previousRunId"] = previous
    path = f"/v1/threads/{thread}/runs" if thread else "/v1/threads/runs"
    began, started = time.perf_counter(), 0.0
    with session.post(url + path, json=body, stream=True, timeout=120) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not started and line.startswith(b"data:") and b"RUN_STARTED" in line:
                started = time.perf_counter() - began
        return started, response.headers.get("X-Thread-Id") or thread, response.headers["X-Run-Id"]


def per_run(runs: int) -> None:
    print(f"\nper-run: {runs} sequential runs of 10-delta answers (offline `!stream 10`), one client; "
          f"on new threads, then as conversations of {CONVERSATION} runs (each run after the first on its thread)")
    print(f"{'database':<11} {'thread':<9} {'CPU ms/run':>10} {'RUN_STARTED ms p50':>19} {'statements/run':>15}")
    cluster = PgCluster(max_connections=100, options="-c log_statement=all -c log_min_messages=log")
    try:
        for name, env in (("SQLite", sqlite_env()), ("PostgreSQL", {"DATABASE_URL": cluster.url})):
            env = {**env, "MODEL_PROVIDER": "offline", "OFFLINE_MODEL_DELAY": "0", "RUN_WATCH_INTERVAL": "60"}
            key = prepare(env)
            app, url = start("tambo_project.asgi:application", env)
            try:
                session = requests.Session()
                session.headers["x-api-key"] = key
                for _ in range(5):
                    read_run(session, url + "/v1/threads/runs", run_body("!stream 10"))  # warm-up
                for kind in ("new", "existing"):
                    log_at = cluster.log_size()
                    before = cpu_seconds(app.pid)
                    started, thread, previous = [], None, None
                    for i in range(runs):
                        if kind == "new" or i % CONVERSATION == 0:
                            thread = previous = None
                        seconds, thread, previous = conversation_run(session, url, thread, previous)
                        if kind == "new" or i % CONVERSATION:
                            started.append(seconds)
                    cpu = (cpu_seconds(app.pid) - before) / runs * 1000
                    statements = cluster.statements_since(log_at) / runs if name == "PostgreSQL" else float("nan")
                    print(f"{name:<11} {kind:<9} {cpu:>10.2f} {statistics.median(started) * 1000:>19.2f} "
                          f"{statements:>15.1f}")
            finally:
                app.terminate(), app.wait()
    finally:
        cluster.stop()
    print("CPU is the server process's user+system time over the runs (the client is another process).")
