"""`bin/bench cluster`: the server on several hosts behind a load balancer, on PostgreSQL alone
(docs/benchmarks.md#several-hosts).

    bin/bench cluster [--hosts 2] [--workers 2] [--streams 10000] [--deltas 90] [--every 1] [--rate 400] [--hold S]

Simulated on one machine (bench/hosts.py): PostgreSQL on host `db`, `--hosts` app hosts each serving
`tambo-server serve --workers N`, nginx on host `lb` configured as docs/deployment.md says, and this
process as the load generator beside them. It opens `--streams` runs through the load balancer (the
offline model's `!stream N every S` rule: `--deltas` words, one every `--every` seconds), `--rate` new
ones a second, and while they stream it:

- samples the streams each server process holds, its RSS, and PostgreSQL's connections per host;
- reads 20 runs partly on one host and resumes them on another (`Last-Event-ID`): the text must be
  whole, with no word twice;
- starts 20 runs on one host and cancels them through another: each stream must end;
- sends 60 starts, alternating hosts, to a project limited to 30 runs a minute: exactly 30 admitted;
- kills every process of the last host (`kill -9`) midway: the streams it held are cut, and each is
  resumed through the load balancer and counted by how it ended (finished, or its RUN_ERROR code).

Then prints one table. Bounded in time: every wait has a deadline. Needs root (network namespaces),
PostgreSQL's server binaries and nginx (installed with apt when missing).
"""
from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import random
import resource
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import aiohttp
import requests

from bench.hosts import SUBNET, Hosts, NginxHost, PostgresHost
from tests.support.sse import aframes_of
from bench.run import ROOT

PORT = 8000
# The load generator's client is aiohttp's (its C HTTP parser): with httpx, the generator spent about
# 175 µs of CPU an event (anyio registering and unregistering each socket with epoll for every read, and
# httpcore's Python parser), a third of a core at 2,000 events a second, on the cores the servers need.
STREAMS_PER_CLIENT = 1000  # streams sharing one aiohttp session (its connector): see load()
Client = aiohttp.ClientSession
ClientErrors = (aiohttp.ClientError, asyncio.TimeoutError, OSError)


@dataclass
class Stream:
    """What one client saw of one run's stream."""

    user: str = ""
    status: int = 0
    thread_id: str = ""
    run_id: str = ""
    last_id: str = ""
    words: list[str] = field(default_factory=list)
    started_after: float | None = None
    end: str = ""  # RUN_FINISHED, or RUN_ERROR:<code>; "" while open or when cut
    error: str = ""
    cut: bool = False  # its connection broke before the run's end at least once
    reconnects: int = 0  # resumes it opened in all

    def take(self, frame: bytes) -> None:
        data = None
        for line in frame.split(b"\n"):
            if line.startswith(b"id:"):
                self.last_id = line[3:].strip().decode()
            elif line.startswith(b"data:"):
                data = json.loads(line[5:])
        if not data:
            return
        kind = data.get("type")
        if kind == "RUN_STARTED":
            self.thread_id, self.run_id = data.get("threadId", ""), data.get("runId", "")
        elif kind == "TEXT_MESSAGE_CONTENT":
            self.words.extend(data.get("delta", "").split())
        elif kind == "RUN_FINISHED":
            self.end = "RUN_FINISHED"
        elif kind == "RUN_ERROR":
            self.end = f"RUN_ERROR:{data.get('code', '?')}"


async def read(client: Client, stream: Stream, method: str, url: str, *, stop_after: int = 0,
               **kwargs) -> Stream:
    """Reads `url`'s SSE into `stream` until it ends, is cut, or has `stop_after` words."""
    began = time.perf_counter()
    try:
        async with client.request(method, url, **kwargs) as response:
            stream.status = response.status
            if response.status != 200:
                stream.error = (await response.read()).decode(errors="replace")[:200]
                return stream
            async for frame in aframes_of(response.content.iter_any()):
                had_run = bool(stream.run_id)
                stream.take(frame)
                if stream.run_id and not had_run and stream.started_after is None:
                    stream.started_after = time.perf_counter() - began
                if stop_after and len(stream.words) >= stop_after:
                    return stream
    except ClientErrors as exc:
        stream.error = f"{type(exc).__name__}: {exc}"[:200]
    return stream


# As the page's client reconnects (static/tambo/resume.js `followRun`, `reconnectDelay`): up to
# MAX_RECONNECTS attempts in a row, each after a growing, capped delay with jitter, so that the
# thousands of clients one dead host cut do not all come back in the same millisecond.
MAX_RECONNECTS = 5


def reconnect_delay(attempt: int) -> float:
    return min(0.5 * 2 ** attempt, 8.0) * (1 - 0.25 * random.random())


async def follow(client: Client, stream: Stream, lb: str, key: str, **start) -> Stream:
    """Starts a run through the load balancer and reads it to its end, resuming it from its last
    event when the connection breaks (a host killed under it), the way the page's client does."""
    await read(client, stream, "POST", f"{lb}/v1/threads/runs", **start)
    attempt = 0
    while stream.run_id and not stream.end and attempt < MAX_RECONNECTS:
        if stream.status and stream.status != 200 and stream.status < 500:
            break  # an answer that retrying will not change (404: the run is not known)
        stream.cut = True
        await asyncio.sleep(reconnect_delay(attempt))
        words, attempt = len(stream.words), attempt + 1
        stream.error, stream.status, stream.reconnects = "", 0, stream.reconnects + 1
        await read(client, stream, "GET", f"{lb}/v1/threads/{stream.thread_id}/runs/{stream.run_id}/events",
                   headers={"x-api-key": key, "Last-Event-ID": stream.last_id}, params={"userKey": stream.user})
        if len(stream.words) > words:
            attempt = 0  # it got somewhere: the next break starts the delays again, as the client does
    return stream


def _body(user: str, text: str) -> dict:
    # `continue`: a run goes on when its stream is cut (the resume and the kill below), as a resumable
    # client asks (docs/protocol.md#resumable-runs).
    return {"userKey": user, "onDisconnect": "continue",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


def _expected(deltas: int) -> list[str]:
    return [f"w{i}" for i in range(deltas)]


async def resume_across_hosts(client: Client, hosts: list[str], key: str, n: int = 20) -> int:
    """Runs read partly on the first host and resumed on the second; returns how many came out whole."""
    async def one(i: int) -> bool:
        stream = Stream()
        await read(client, stream, "POST", f"{hosts[0]}/v1/threads/runs", stop_after=5,
                   json=_body(f"resume-{i}", "!stream 30 every 0.2"), headers={"x-api-key": key})
        if not stream.run_id:
            return False
        await read(client, stream, "GET", f"{hosts[1]}/v1/threads/{stream.thread_id}/runs/{stream.run_id}/events",
                   params={"userKey": f"resume-{i}"}, headers={"x-api-key": key, "Last-Event-ID": stream.last_id})
        return stream.end == "RUN_FINISHED" and stream.words == _expected(30)

    return sum(await asyncio.gather(*(one(i) for i in range(n))))


async def cancel_across_hosts(client: Client, hosts: list[str], key: str, n: int = 20) -> int:
    """Runs started on the first host and cancelled through the second; returns how many streams ended."""
    async def one(i: int) -> bool:
        stream = Stream()
        user = f"cancel-{i}"
        await read(client, stream, "POST", f"{hosts[0]}/v1/threads/runs", stop_after=3,
                   json=_body(user, "!stream 300 every 0.2"), headers={"x-api-key": key})
        if not stream.run_id:
            return False
        following = asyncio.create_task(read(
            client, stream, "GET", f"{hosts[0]}/v1/threads/{stream.thread_id}/runs/{stream.run_id}/events",
            params={"userKey": user}, headers={"x-api-key": key, "Last-Event-ID": stream.last_id}))
        try:
            async with client.delete(f"{hosts[1]}/v1/threads/{stream.thread_id}/runs/{stream.run_id}",
                                     params={"userKey": user}, headers={"x-api-key": key}) as cancelled:
                await cancelled.read()
            await asyncio.wait_for(following, 20)
        except ClientErrors:
            following.cancel()
            return False
        return cancelled.status == 200 and bool(stream.end) and len(stream.words) < 300

    return sum(await asyncio.gather(*(one(i) for i in range(n))))


async def limit_across_hosts(client: Client, hosts: list[str], key: str, n: int = 60) -> tuple[int, int]:
    """`n` starts on a project limited to 30 runs a minute, alternating hosts; returns how many were
    admitted, and over how many minutes of the clock the starts were answered (30 per minute)."""
    async def one(i: int) -> int:
        try:
            async with client.post(f"{hosts[i % len(hosts)]}/v1/threads/runs",
                                   json=_body(f"limit-{i}", "!stream 1"), headers={"x-api-key": key}) as response:
                await response.read()
        except ClientErrors:
            return 0
        return response.status

    first_minute = int(time.time() // 60)
    statuses = await asyncio.gather(*(one(i) for i in range(n)))
    windows = int(time.time() // 60) - first_minute + 1  # the limit counts per minute of the clock
    return sum(1 for status in statuses if status == 200), windows


class App:
    """`tambo-server serve` on one host."""

    def __init__(self, hosts: Hosts, name: str, address: str, env: dict[str, str], workers: int, log: Path):
        self.name, self.url = name, f"http://{address}:{PORT}"
        self._log = open(log, "wb")
        argv = [sys.executable, "-c", "from tambo_project.cli import main; main()", "serve", "--host", address,
                "--port", str(PORT), "--workers", str(workers), "--no-collectstatic"]
        self.process = hosts.popen(name, argv, cwd=ROOT, env=env, stdout=self._log, stderr=subprocess.STDOUT)

    def pids(self) -> list[int]:
        """The serving processes: the workers, or the one process when there are none."""
        children = subprocess.run(["ps", "-o", "pid=", "--ppid", str(self.process.pid)], capture_output=True,
                                  text=True).stdout.split()
        workers = [int(pid) for pid in children if _is_worker(int(pid))]
        return workers or [self.process.pid]

    def kill(self) -> None:
        for pid in [*self.pids(), self.process.pid]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.kill()
        self._log.close()


def _is_worker(pid: int) -> bool:
    """uvicorn's worker processes, not multiprocessing's resource tracker beside them."""
    try:
        return b"spawn_main" in Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False


def _rss_mb(pid: int) -> float:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        pass
    return 0.0


def _manage(env: dict[str, str], *args: str) -> str:
    return subprocess.run([sys.executable, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True,
                          text=True).stdout


def _wait_healthy(urls: list[str], deadline: float) -> None:
    for url in urls:
        while True:
            try:
                if requests.get(url + "/healthz", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            if time.monotonic() > deadline:
                raise SystemExit(f"{url} did not answer /healthz in time")
            time.sleep(0.2)


def _raise_open_files() -> None:
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    want = 200_000
    try:
        resource.setrlimit(resource.RLIMIT_NOFILE, (want, max(hard, want)))
    except (ValueError, OSError):
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def load(args: argparse.Namespace, apps: list[App], lb: str, pg: PostgresHost, keys: dict[str, str],
               hosts: Hosts) -> dict:
    n, deltas = args.streams, args.deltas
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=30, sock_read=deltas * args.every + 120)
    figures: dict = {"streams_per_process": {}, "rss_mb": {}, "pg_connections": {}}
    # One session per STREAMS_PER_CLIENT streams, each with no cap on its connections (limit=0): a
    # stream holds its connection for minutes, and a pool that looks at all its connections for each
    # request (httpcore's did: 76 % of this process's CPU at 6,000 streams) must stay small.
    async with contextlib.AsyncExitStack() as clients_open:
        shards = [await clients_open.enter_async_context(aiohttp.ClientSession(
                      connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=2.0), timeout=timeout))
                  for _ in range(max(1, math.ceil(n / STREAMS_PER_CLIENT)))]
        client = shards[0]
        streams = [Stream(user=f"u{i}") for i in range(n)]
        text = f"!stream {deltas} every {args.every}"
        tasks = []
        ramp_began = time.monotonic()
        for i, stream in enumerate(streams):
            tasks.append(asyncio.create_task(follow(shards[i % len(shards)], stream, lb, keys["main"],
                                                    json=_body(stream.user, text), headers={"x-api-key": keys["main"]})))
            pause = ramp_began + (i + 1) / args.rate - time.monotonic()
            if pause > 0:
                await asyncio.sleep(pause)
        figures["ramp_s"] = time.monotonic() - ramp_began
        # Every stream open, each at its own word a second: held `--hold` seconds before the checks and
        # the kill, so the table's figures are those of the steady state the issue names.
        await asyncio.sleep(args.hold if args.hold is not None else min(5.0, deltas * args.every / 4))

        def sample() -> None:
            for app in apps:
                held = hosts.sockets_by_pid(app.name, PORT)
                for pid in app.pids():
                    key = f"{app.name}:{pid}"
                    figures["streams_per_process"][key] = max(figures["streams_per_process"].get(key, 0), held.get(pid, 0))
                    figures["rss_mb"][key] = max(figures["rss_mb"].get(key, 0.0), _rss_mb(pid))
            for address, count in pg.connections_by_address().items():
                figures["pg_connections"][address] = max(figures["pg_connections"].get(address, 0), count)

        direct = [app.url for app in apps]
        checks = asyncio.gather(resume_across_hosts(client, direct, keys["main"]),
                                cancel_across_hosts(client, direct, keys["main"]),
                                limit_across_hosts(client, direct, keys["limited"]))
        figures["open_at_sample"] = 0
        for _ in range(3):
            figures["open_at_sample"] = max(figures["open_at_sample"],
                                            sum(1 for s in streams if s.run_id and not s.end and not s.error))
            await asyncio.to_thread(sample)
            await asyncio.sleep(1)
        figures["resumed_whole"], figures["cancelled_ended"], (figures["limit_admitted"], figures["limit_minutes"]) = (
            await checks)

        killed = apps[-1]
        figures["killed_host"] = killed.name
        if len(apps) > 1:
            killed.kill()
            figures["killed_at_open"] = sum(1 for s in streams if s.run_id and not s.end and not s.error)
        await asyncio.gather(*tasks)

    # The streams a break cut (the kill's, or any other): each was resumed through the load balancer as
    # it broke, from its last event (`follow`).
    cut = [s for s in streams if s.cut]
    cut_ids = {id(s) for s in cut}
    figures["reconnects"] = sum(s.reconnects for s in cut)
    figures["cut"] = len(cut)
    outcomes: dict[str, int] = {}
    for stream in cut:
        outcome = (stream.end if stream.end != "RUN_FINISHED" or stream.words == _expected(deltas) else "RUN_FINISHED, words wrong") \
            or f"no end ({stream.error.split(':')[0] or stream.status or 'closed'})"
        outcomes[outcome] = outcomes.get(outcome, 0) + 1
    figures["cut_outcomes"] = outcomes
    uncut = [s for s in streams if id(s) not in cut_ids]
    figures["finished_whole"] = sum(1 for s in uncut if s.end == "RUN_FINISHED" and s.words == _expected(deltas))
    figures["failed"] = [s.error or s.end or str(s.status) for s in uncut
                         if not (s.end == "RUN_FINISHED" and s.words == _expected(deltas))]
    started = sorted(s.started_after for s in streams if s.started_after is not None)
    figures["run_started_p50_ms"] = statistics.median(started) * 1000 if started else None
    figures["run_started_p99_ms"] = started[int(len(started) * 0.99) - 1] * 1000 if started else None
    return figures


def cluster(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bin/bench cluster")
    parser.add_argument("--hosts", type=int, default=2, help="app hosts (2 or 3)")
    parser.add_argument("--workers", type=int, default=2, help="server processes per host")
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--deltas", type=int, default=90, help="words per answer")
    parser.add_argument("--every", type=float, default=1.0, help="seconds between words")
    parser.add_argument("--rate", type=float, default=400.0, help="new runs a second while ramping up")
    parser.add_argument("--hold", type=float, default=None,
                        help="seconds every stream stays open before the checks and the kill (default: 5)")
    args = parser.parse_args(argv)
    _raise_open_files()
    began = time.monotonic()
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
    hosts = Hosts()
    apps: list[App] = []
    pg = lb = None
    logs = Path(tempfile.mkdtemp(prefix="tambo-cluster-logs."))
    try:
        pg = PostgresHost(hosts, "db", hosts.add("db", 2), max_connections=300)
        env = {**os.environ, "DATABASE_URL": pg.url, "MODEL_PROVIDER": "offline", "LOG_LEVEL": "WARNING",
               "FORWARDED_ALLOW_IPS": f"{SUBNET}.3", "STATIC_COLLECTED": "false", "RETENTION_INTERVAL_SECONDS": "0"}
        env.setdefault("SECRET_KEY", "cluster-bench-" + os.urandom(24).hex())
        _manage(env, "migrate", "-v", "0")
        project_file = logs / "projects.yaml"
        # The main project's runs are bounded by the bench's own numbers, not by a default run rate.
        project_file.write_text("projects:\n  - name: cluster\n    limits:\n      runsPerMinute: 1000000\n"
                                "      runsPerMinutePerUser: 1000\n  - name: limited\n    limits:\n      runsPerMinute: 30\n")
        _manage(env, "apply_projects", str(project_file))
        keys = {name: _manage(env, "createapikey", "--project", project).split()[-1]
                for name, project in (("main", "cluster"), ("limited", "limited"))}
        addresses = [hosts.add(f"h{i + 1}", 11 + i) for i in range(args.hosts)]
        apps = [App(hosts, f"h{i + 1}", address, env, args.workers, logs / f"h{i + 1}.log")
                for i, address in enumerate(addresses)]
        lb = NginxHost(hosts, "lb", hosts.add("lb", 3), [f"{a}:{PORT}" for a in addresses])
        _wait_healthy([app.url for app in apps] + [lb.url], time.monotonic() + 180)
        figures = asyncio.run(load(args, apps, lb.url, pg, keys, hosts))
    finally:
        for app in apps:
            app.stop()
        if lb:
            lb.stop()
        if pg:
            pg.stop()
        hosts.close()
    _print(args, figures, time.monotonic() - began, logs)


def _print(args: argparse.Namespace, f: dict, seconds: float, logs: Path) -> None:
    processes = f["streams_per_process"]
    print(f"\n{args.streams} streams through nginx to {args.hosts} hosts × {args.workers} processes, "
          f"{args.deltas} words each, one every {args.every} s; ramp {f['ramp_s']:.0f} s")
    print(f"{'process':<14} {'streams held':>12} {'RSS MB':>8}")
    for key in sorted(processes):
        print(f"{key:<14} {processes[key]:>12} {f['rss_mb'][key]:>8.0f}")
    print(f"{'all':<14} {sum(processes.values()):>12} {sum(f['rss_mb'].values()):>8.0f}")
    print(f"open runs at the sample (peak): {f['open_at_sample']}; streams held count nginx's idle keep-alive connections too")
    print("PostgreSQL connections by host (peak): "
          + ", ".join(f"{address} {count}" for address, count in sorted(f["pg_connections"].items())))
    print(f"RUN_STARTED under load: p50 {f['run_started_p50_ms']:.0f} ms, p99 {f['run_started_p99_ms']:.0f} ms")
    kinds: dict[str, int] = {}
    for failure in f["failed"]:  # by kind: the exception's or the event's name, without its detail
        kind = failure.split(":")[0] if not failure.startswith("RUN_ERROR") else failure
        kinds[kind] = kinds.get(kind, 0) + 1
    print(f"streams never cut: {f['finished_whole']} finished whole, {len(f['failed'])} failed"
          + (" (" + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])) + ")"
             if kinds else ""))
    print(f"resumed on another host: {f['resumed_whole']}/20 whole; cancelled through another host: "
          f"{f['cancelled_ended']}/20 ended; limit of 30/min across hosts: {f['limit_admitted']}/60 admitted over {f['limit_minutes']} minute(s)")
    print(f"kill -9 of {f['killed_host']}: {f.get('killed_at_open', 0)} runs open, {f['cut']} streams cut, "
          f"each resumed through nginx as it broke ({f['reconnects']} reconnects): "
          + (", ".join(f"{k} {v}" for k, v in sorted(f["cut_outcomes"].items())) or "-"))
    print(f"{seconds:.0f} s in all; load average {os.getloadavg()[0]:.2f} at the end; server logs in {logs}")
