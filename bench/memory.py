"""`bin/bench memory [--readers 50] [--deltas 100000] [--delay 0.01] [--rounds 1] [--env NAME=VALUE ...]`: the server's
memory around a burst of slow readers (not a test: it prints figures for docs/operations-faults.md).

Starts the app under uvicorn on a SQLite file, starts `--readers` runs of the offline model's
`!stream N` rule (N deltas with no delay) read by clients that take 16 KB and then sleep `--delay`
seconds, and prints the server's RSS before, its peak, and after the readers ended (at once, then
10 and 30 s later, when nothing runs). `--env` passes settings to the server (e.g.
MALLOC_ARENA_MAX=2) to compare.
"""
from __future__ import annotations

import argparse
import threading
import time
from pathlib import Path

import requests

from bench.capacity import peak_rss_mb, prepare, run_body, sqlite_env
from bench.run import start
from tests.support.many_streams import Sampler


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return 0.0


def slow_reader(url: str, key: str, deltas: int, delay: float, results: list, i: int) -> None:
    received, lagged = 0, False
    try:
        with requests.post(url + "/v1/threads/runs", json=run_body(f"!stream {deltas}", user=f"reader-{i}"),
                           headers={"x-api-key": key}, stream=True, timeout=300) as response:
            for chunk in response.iter_content(chunk_size=16384):
                received += len(chunk)
                lagged = lagged or b"tambo.stream.lagged" in chunk
                time.sleep(delay)
    except requests.RequestException as exc:
        results[i] = (received, lagged, type(exc).__name__)
        return
    results[i] = (received, lagged, None)


def burst(url: str, key: str, pid: int, readers: int, deltas: int, delay: float) -> None:
    """One burst of slow readers; prints its RSS figures."""
    before = rss_mb(pid)
    results: list = [None] * readers
    threads = [threading.Thread(target=slow_reader, args=(url, key, deltas, delay, results, i))
               for i in range(readers)]
    began = time.monotonic()
    with Sampler(lambda: rss_mb(pid), interval=0.2) as sampled:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    took = time.monotonic() - began
    after = [rss_mb(pid)]
    for wait in (10, 20):
        time.sleep(wait)
        after.append(rss_mb(pid))
    lagged = sum(1 for r in results if r and r[1])
    errors = [r[2] for r in results if r and r[2]]
    print(f"  {took:.0f} s: RSS before {before:.0f} MB, peak {max(sampled.peak, peak_rss_mb(pid)):.0f} MB, "
          f"after {after[0]:.0f} MB, +10 s {after[1]:.0f} MB, +30 s {after[2]:.0f} MB; "
          f"cut as lagging: {lagged}; client errors: {len(errors)} {sorted(set(errors))}")


def memory(readers: int, deltas: int, delay: float, extra_env: dict[str, str], rounds: int = 1) -> None:
    env = {**sqlite_env(), "MODEL_PROVIDER": "offline", "LOG_LEVEL": "WARNING", **extra_env}
    key = prepare(env)
    proc, url = start("tambo_project.asgi:application", env)
    try:
        requests.post(url + "/v1/threads/runs", json=run_body("!stream 100"), headers={"x-api-key": key},
                      timeout=60).content  # warm-up: imports, the first run
        print(f"{readers} readers of {deltas:,} deltas (16 KB then {delay} s), {rounds} burst(s) on one server; "
              f"server env {extra_env or '-'}")
        # Several bursts tell a high-water mark (the first burst's threads, caches and allocator pools,
        # reused by the next) from a leak (each burst adding its own).
        for _ in range(rounds):
            burst(url, key, proc.pid, readers, deltas, delay)
    finally:
        proc.terminate()
        proc.wait()


def main(argv: list[str]) -> None:
    parser = argparse.ArgumentParser(prog="bin/bench memory")
    parser.add_argument("--readers", type=int, default=50)
    parser.add_argument("--deltas", type=int, default=100_000)
    parser.add_argument("--delay", type=float, default=0.01)
    parser.add_argument("--env", action="append", default=[], help="NAME=VALUE for the server")
    parser.add_argument("--rounds", type=int, default=1, help="bursts in a row on the same server")
    args = parser.parse_args(argv)
    memory(args.readers, args.deltas, args.delay, dict(item.split("=", 1) for item in args.env), args.rounds)
