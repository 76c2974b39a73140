"""`bin/bench takeover [--runs 500] [--lease 30] [--delay 0.05]`: runs outliving their process
(docs/operations.md#takeover), on a throwaway PostgreSQL cluster with two uvicorn processes A and B.

1. kill -9: one run on A (offline model, `delay` seconds between deltas, a long answer) read through B's
   events route; A is killed mid-answer. Prints the time from the kill to the first event of the new
   owner (its `tambo.run.takeover`), against the target of a third of the lease plus a second.
2. a deploy: `runs` runs on A together, each read through B; A gets SIGTERM once every reader has text.
   Prints the runs lost (a reader that did not end with RUN_FINISHED), the takeovers, and the gaps in
   the readers' streams (time between two events of one reader): p50, p99 and the largest.

The defaults are the issue's figures (500 runs, the default lease); on a shared machine run it small:
`bin/bench takeover --runs 20 --lease 6`.
"""
from __future__ import annotations

import asyncio
import os
import signal
import statistics
import time

from bench.capacity import prepare
from bench.resume import _pct, _request
from bench.run import start
from tests.support.pg_cluster import PgCluster
from tests.support.sse import aframes_of, data_of

TEXT = "Tell me everything about runs that outlive their process, please. " * 8


def _body(text: str) -> dict:
    return {"userKey": "bench", "onDisconnect": "continue",
            "message": {"role": "user", "content": [{"type": "text", "text": text}]}}


class _Reader:
    def __init__(self, url: str, key: str):
        self.url, self.key = url, key
        self.events: list[tuple[float, dict]] = []
        self.texting = asyncio.Event()

    async def follow(self, thread_id: str, run_id: str) -> None:
        response = await _request(self.url, "GET", f"/v1/threads/{thread_id}/runs/{run_id}/events?userKey=bench",
                                  self.key)
        async for frame in aframes_of(response.chunks()):
            event = data_of(frame)
            if event is None:
                continue
            self.events.append((time.perf_counter(), event))
            if event["type"] == "TEXT_MESSAGE_CONTENT":
                self.texting.set()
        self.texting.set()


async def _start(url: str, key: str) -> tuple[str, str]:
    response = await _request(url, "POST", "/v1/threads/runs", key, _body(TEXT))
    response.writer.close()  # onDisconnect "continue": the run goes on; its readers use the events route
    return response.headers["x-thread-id"], response.headers["x-run-id"]


async def _kill(procs, urls, key: str) -> float:
    thread_id, run_id = await _start(urls[0], key)
    reader = _Reader(urls[1], key)
    task = asyncio.create_task(reader.follow(thread_id, run_id))
    await asyncio.wait_for(reader.texting.wait(), 120)
    await asyncio.sleep(0.5)
    killed = time.perf_counter()
    procs[0].send_signal(signal.SIGKILL)
    await asyncio.wait_for(task, 600)
    first = next(t for t, e in reader.events if e.get("name") == "tambo.run.takeover")
    assert reader.events[-1][1]["type"] == "RUN_FINISHED", reader.events[-1]
    return first - killed


async def _deploy(procs, urls, key: str, runs: int) -> tuple[int, int, list[float], float]:
    started = await asyncio.gather(*[_start(urls[0], key) for _ in range(runs)])
    readers = [_Reader(urls[1], key) for _ in started]
    tasks = [asyncio.create_task(r.follow(t, rid)) for r, (t, rid) in zip(readers, started)]
    await asyncio.wait_for(asyncio.gather(*[r.texting.wait() for r in readers]), 600)
    stopped = time.perf_counter()
    procs[0].send_signal(signal.SIGTERM)
    await asyncio.wait_for(asyncio.gather(*tasks), 900)
    lost = sum(not r.events or r.events[-1][1]["type"] != "RUN_FINISHED" for r in readers)
    taken = sum(any(e.get("name") == "tambo.run.takeover" for _, e in r.events) for r in readers)
    gaps = [(b[0] - a[0]) * 1000 for r in readers for a, b in zip(r.events, r.events[1:]) if b[0] >= stopped]
    last = max(r.events[-1][0] for r in readers) - stopped
    return lost, taken, gaps, last


def takeover(runs: int, lease: float, delay: float) -> None:
    cluster = PgCluster(max_connections=200)
    try:
        env = {"DATABASE_URL": cluster.url, "MODEL_PROVIDER": "offline", "OFFLINE_MODEL_DELAY": str(delay),
               "RUN_LEASE_SECONDS": str(lease), "DB_POOL_SIZE": "10", "LOG_LEVEL": "WARNING"}
        key = prepare(env)
        procs, urls = zip(*[start("tambo_project.asgi:application", env) for _ in range(2)])
        try:
            after_kill = asyncio.run(_kill(procs, urls, key))
        finally:
            for proc in procs:
                proc.kill(), proc.wait()
        procs, urls = zip(*[start("tambo_project.asgi:application", env) for _ in range(2)])
        try:
            lost, taken, gaps, last = asyncio.run(_deploy(procs, urls, key, runs))
        finally:
            for proc in procs:
                if proc.poll() is None:
                    proc.terminate()
                proc.wait()
    finally:
        cluster.stop()
    print(f"\ntakeover: two processes on PostgreSQL, lease {lease:g} s, offline model {delay * 1000:g} ms per delta,"
          f" {os.cpu_count()} cores")
    print(f"kill -9 → first event from the new owner: {after_kill:.2f} s (target ≤ lease/3 + 1 s = {lease / 3 + 1:.2f} s)")
    print(f"deploy (SIGTERM) of one process with {runs} open runs: runs lost {lost}, taken over {taken}, "
          f"last run finished {last:.1f} s after the signal")
    if gaps:
        print(f"gaps in the readers' streams after the signal: p50 {statistics.median(gaps):.0f} ms, "
              f"p99 {_pct(gaps, 0.99):.0f} ms, max {max(gaps):.0f} ms ({len(gaps)} gaps)")
