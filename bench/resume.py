"""`bin/bench resume [--runs 100] [--delay 0.05]`: resumable runs across two processes (docs/protocol.md#resumable-runs).

Starts a throwaway PostgreSQL cluster logging every statement (tests/support/pg_cluster.py) and two
uvicorn processes A and B on it. Starts `runs` runs on A together (offline model, `delay` seconds
between deltas, `onDisconnect: "continue"`); each run's own stream is read, and two readers join it
through the events route, one on A and one on B. Prints the database's statements per second during
the runs (from the statement log; transaction control left out; pg_stat_database's commit counter
beside it), the event log's share of them, and the latency a reader adds over the run's own
stream, per event (median and p95), for a reader on the same process and one on the other.
Only events the run produced after the reader had joined count (not its replay). It does that
twice, the second time with the answers streamed four times as fast, and ends with a table of
events per second against statements per second.
"""
from __future__ import annotations

import asyncio
import json
import statistics
import time

import psycopg

from bench.capacity import cpu_seconds, prepare
from bench.run import start
from tests.support.pg_cluster import PgCluster
from tests.support.sse import aframes_of


def _body(text: str) -> dict:
    return {"userKey": "bench", "onDisconnect": "continue",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


class _Response:
    """A streaming HTTP/1.1 answer read straight off a socket. The bench client shares the server's
    two cores, so it reads as cheaply as it can (an HTTP library cost it more CPU than both servers)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, status: int,
                 headers: dict[str, str]):
        self.reader, self.writer, self.status, self.headers = reader, writer, status, headers

    async def chunks(self):
        chunked = self.headers.get("transfer-encoding", "").lower() == "chunked"
        try:
            while True:
                if not chunked:
                    data = await self.reader.read(65536)
                    if not data:
                        return
                    yield data
                    continue
                size = int((await self.reader.readline()).split(b";")[0], 16)
                if not size:
                    return
                data = await self.reader.readexactly(size + 2)
                yield data[:-2]
        finally:
            self.writer.close()


async def _request(url: str, method: str, path: str, key: str, body: dict | None = None) -> _Response:
    host, port = url.removeprefix("http://").split(":")
    reader, writer = await asyncio.open_connection(host, int(port))
    payload = json.dumps(body).encode() if body is not None else b""
    writer.write(f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nx-api-key: {key}\r\nConnection: close\r\n"
                 f"Content-Type: application/json\r\nContent-Length: {len(payload)}\r\n\r\n".encode() + payload)
    status = int((await reader.readline()).split()[1])
    headers = {}
    while (line := await reader.readline()) not in (b"\r\n", b""):
        name, _, value = line.decode().partition(":")
        headers[name.strip().lower()] = value.strip()
    if status != 200:
        raise SystemExit(f"{method} {path}: HTTP {status}")
    return _Response(reader, writer, status, headers)


async def _arrivals(response: _Response) -> dict[int, float]:
    """{event id: when it arrived} for a streaming answer, to its end."""
    seen: dict[int, float] = {}
    async for frame in aframes_of(response.chunks()):
        if frame.startswith(b"id: "):
            seen[int(frame[4:frame.index(b"\n")])] = time.perf_counter()
    return seen


async def _reader(url: str, key: str, thread_id: str, run_id: str) -> tuple[float, dict[int, float]]:
    response = await _request(url, "GET", f"/v1/threads/{thread_id}/runs/{run_id}/events?userKey=bench", key)
    return time.perf_counter(), await _arrivals(response)


async def _one_run(url_a: str, url_b: str, key: str, text: str):
    response = await _request(url_a, "POST", "/v1/threads/runs", key, _body(text))
    thread_id, run_id = response.headers["x-thread-id"], response.headers["x-run-id"]
    readers = [asyncio.create_task(_reader(url, key, thread_id, run_id)) for url in (url_a, url_b)]
    own = await _arrivals(response)
    same, other = await asyncio.gather(*readers)
    return own, same, other


def _added(own: dict[int, float], reader: tuple[float, dict[int, float]], since: float = 0.0) -> list[float]:
    joined, seen = reader
    assert set(seen) == set(own), "a reader missed events or got others"
    return [(seen[i] - own[i]) * 1000 for i in own if own[i] > max(joined, since)]


def _xacts(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT xact_commit + xact_rollback FROM pg_stat_database "
                            "WHERE datname = current_database()").fetchone()[0]


def _pg_stat_statements(url: str) -> bool:
    with psycopg.connect(url, autocommit=True) as conn:
        return conn.execute("SELECT count(*) FROM pg_available_extensions "
                            "WHERE name = 'pg_stat_statements'").fetchone()[0] > 0


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def resume(runs: int, delay: float) -> None:
    """Two passes over the same runs: the second streams each run's answer four times as fast (a
    quarter of the delay, four times the text: about the same length of time), so the event rate
    quadruples while the number of runs, readers and processes stays; the statements per second
    should not follow it."""
    cluster = PgCluster(max_connections=100, options="-c log_statement=all -c log_min_messages=log")
    passes = []
    try:
        base = {"DATABASE_URL": cluster.url, "MODEL_PROVIDER": "offline", "DB_POOL_SIZE": "10"}
        key = prepare(base)
        for pass_delay, repeat in ((delay, 8), (delay / 4, 32)):
            passes.append((pass_delay, _pass(cluster, {**base, "OFFLINE_MODEL_DELAY": str(pass_delay)}, key, runs,
                                             repeat)))
        stat_statements = _pg_stat_statements(cluster.url)
    finally:
        cluster.stop()
    print(f"\nresume: {runs} runs on process A started together (offline model), each read by its own stream,"
          f" a reader on A and a reader on B; pg_stat_statements {'available' if stat_statements else 'not installed'}"
          f" (the statement log is used)")
    for pass_delay, (results, wall, statements, event_log, xacts, cpu) in passes:
        _report(runs, pass_delay, results, wall, statements, event_log, xacts, cpu)
    print("\n| delay between deltas | events/s produced | statements/s (event log) |")
    print("|---|---|---|")
    for pass_delay, (results, wall, statements, event_log, _, _) in passes:
        events = sum(len(own) for own, _, _ in results)
        print(f"| {pass_delay * 1000:g} ms | {events / wall:,.0f} | {statements / wall:.0f} ({event_log / wall:.0f}) |")


def _pass(cluster: PgCluster, env: dict[str, str], key: str, runs: int, repeat: int):
    (proc_a, url_a), (proc_b, url_b) = start("tambo_project.asgi:application", env), \
        start("tambo_project.asgi:application", env)
    try:
        cpu_before = [cpu_seconds(p.pid) for p in (proc_a, proc_b)] + [time.process_time()]
        results, wall, statements, event_log, xacts = asyncio.run(
            _drive(cluster, url_a, url_b, key, runs, "Tell me about resumable streams, please. " * repeat))
        cpu = [after - before for after, before in zip(
            [cpu_seconds(p.pid) for p in (proc_a, proc_b)] + [time.process_time()], cpu_before)]
    finally:
        for proc in (proc_a, proc_b):
            proc.terminate(), proc.wait()
    return results, wall, statements, event_log, xacts, cpu


def _report(runs: int, delay: float, results, wall: float, statements: int, event_log: int, xacts: int,
            cpu: list[float]) -> None:
    own_events = sum(len(own) for own, _, _ in results)
    # Steady state: events produced once every reader of every run had joined (the start is a burst
    # of 100 run starts and 200 joins at once).
    all_joined = max(reader[0] for _, same_reader, other_reader in results for reader in (same_reader, other_reader))
    rows = []
    for since, label in ((0.0, ""), (all_joined, ", steady")):
        rows.append((f"same process (A){label}", [ms for own, r, _ in results for ms in _added(own, r, since)]))
        rows.append((f"other process (B){label}", [ms for own, _, r in results for ms in _added(own, r, since)]))
    print(f"\n{delay * 1000:g} ms between deltas: events per run {own_events / runs:.0f}; delivered {own_events * 3};"
          f" wall {wall:.1f} s; CPU seconds: server A {cpu[0]:.1f}, server B {cpu[1]:.1f}, this client {cpu[2]:.1f}")
    print(f"database statements/s during the runs {statements / wall:.0f} ({statements} in all, "
          f"{event_log} on the event log: {event_log / wall:.0f}/s); "
          f"transactions/s (pg_stat_database) {xacts / wall:.0f}")
    print(f"{'reader':<34} {'events':>7} {'added ms p50':>13} {'p95':>7} {'max':>7}")
    for name, values in rows:
        if not values:
            continue
        print(f"{name:<34} {len(values):>7} {statistics.median(values):>13.1f} {_pct(values, 0.95):>7.1f} "
              f"{max(values):>7.1f}")
    print("added: when the reader got an event minus when the run's own stream got it, same client machine.")


async def _drive(cluster: PgCluster, url_a: str, url_b: str, key: str, runs: int, text: str):
    await _one_run(url_a, url_b, key, "warm up")
    offset, xacts = cluster.log_size(), _xacts(cluster.url)
    began = time.perf_counter()
    results = await asyncio.gather(*[_one_run(url_a, url_b, key, text) for _ in range(runs)])
    wall = time.perf_counter() - began
    logged = cluster.statements(offset)
    statements, event_log = len(logged), sum("runs_runevent" in sql for sql in logged)
    return results, wall, statements, event_log, _xacts(cluster.url) - xacts - 1
