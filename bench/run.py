"""Benchmark: time to first event and streamed events per second for a run, beside a bare baseline.

    bin/bench [--deltas 200 2000] [--repeat 15]
    bin/bench pipeline [--repeat 3] [--streams N [--deltas 1000]] | per-run [--runs 50]
    bin/bench concurrency N [--delay 0.1] [--pool 10] [--workers 1] [--pin] [--rounds 1]
    bin/bench floor [--runs 100]
    bin/bench resume [--runs 100] [--delay 0.05]
    bin/bench props [--repeat 5]
    bin/bench memory [--readers 50] [--deltas 100000] [--delay 0.01] [--env NAME=VALUE]
    bin/bench media [--images 40]
    bin/bench cluster [--hosts 2] [--workers 2] [--streams 10000] [--deltas 90] [--every 1] [--rate 400] [--hold S]
    bin/bench takeover [--runs 500] [--lease 30] [--delay 0.05]
    bin/bench encrypt [--runs 50] [--rounds 3]
    bin/bench retention [ROWS ...]   (default 100000 1000000)

The named scenarios are in bench/capacity.py, bench/floor.py, bench/resume.py, bench/props.py,
bench/memory.py, bench/media.py, bench/takeover.py, bench/encrypt.py and bench/retention.py.

Starts the real app under uvicorn (SQLite in a temporary directory, the offline model's
`!stream N` rule: N deltas with no delay) and the bare ASGI app of bench/baseline_app.py that
writes the same bytes, then measures both from a client on loopback and prints a table of medians.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import requests

from tests.support.sse import FrameSplitter

ROOT = Path(__file__).resolve().parents[1]


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def start(app: str, env: dict[str, str], args: tuple[str, ...] = (), wrap: tuple[str, ...] = ()
          ) -> tuple[subprocess.Popen, str]:
    """uvicorn serving `app` with `args` added (e.g. `--workers 2`), started through `wrap` (e.g.
    `taskset -c 1`, which execs it: the process is uvicorn's)."""
    port = free_port()
    proc = subprocess.Popen([*wrap, sys.executable, "-m", "uvicorn", app, "--port", str(port), "--no-access-log",
                             "--log-level", "warning", *args], cwd=ROOT,
                            # The safe default of 60 runs a minute (docs/abuse-and-limits.md#safe-defaults)
                            # would refuse a benchmark's bursts: off unless a scenario sets its own.
                            env={**os.environ, "DEFAULT_RUNS_PER_MINUTE": "0", **env})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120  # a shared, busy machine can take a while to import Django
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if requests.get(url + "/healthz", timeout=1).ok:
                return proc, url
        except requests.RequestException:
            time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"{app} did not start")


def measure(session: requests.Session, url: str, body: dict) -> tuple[float, float, int, list[str]]:
    """(seconds to first event, seconds to last byte, events, raw frames)."""
    began = time.perf_counter()
    first = None
    frames, splitter = [], FrameSplitter()
    with session.post(url, json=body, stream=True, timeout=60) as response:
        response.raise_for_status()
        for chunk in response.iter_content(chunk_size=None):
            if first is None:
                first = time.perf_counter() - began
            frames += [frame.decode() + "\n\n" for frame in splitter.feed(chunk)]
    return first or 0.0, time.perf_counter() - began, len(frames), frames


def scenario(argv: list[str]) -> None:
    from bench import capacity

    parser = argparse.ArgumentParser(prog="bin/bench")
    sub = parser.add_subparsers(dest="name", required=True)
    pipe = sub.add_parser("pipeline")
    pipe.add_argument("--repeat", type=int, default=3)
    pipe.add_argument("--streams", type=int, default=0, help="N answers at once (0: one 5,000-delta answer)")
    pipe.add_argument("--deltas", type=int, default=1000, help="each answer's deltas with --streams")
    conc = sub.add_parser("concurrency")
    conc.add_argument("n", type=int)
    conc.add_argument("--delay", type=float, default=0.1)
    conc.add_argument("--pool", type=int, default=10)
    conc.add_argument("--workers", type=int, default=1, help="uvicorn worker processes")
    conc.add_argument("--pin", action="store_true",
                      help="the server on CPU 1, this load generator and PostgreSQL on CPU 0 (taskset)")
    conc.add_argument("--rounds", type=int, default=1, help="bursts of N, one after the other, same server")
    sub.add_parser("per-run").add_argument("--runs", type=int, default=50)
    sub.add_parser("floor").add_argument("--runs", type=int, default=100)
    resume = sub.add_parser("resume")
    resume.add_argument("--runs", type=int, default=100)
    resume.add_argument("--delay", type=float, default=0.05)
    sub.add_parser("props").add_argument("--repeat", type=int, default=5)
    sub.add_parser("media").add_argument("--images", type=int, default=40)
    encrypt_parser = sub.add_parser("encrypt")
    encrypt_parser.add_argument("--runs", type=int, default=50)
    encrypt_parser.add_argument("--rounds", type=int, default=3)
    takeover_parser = sub.add_parser("takeover")
    takeover_parser.add_argument("--runs", type=int, default=500)
    takeover_parser.add_argument("--lease", type=float, default=30.0)
    takeover_parser.add_argument("--delay", type=float, default=0.05)
    args = parser.parse_args(argv)
    print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
    if args.name == "pipeline" and args.streams:
        capacity.pipeline_streams(args.streams, args.deltas, args.repeat)
    elif args.name == "pipeline":
        capacity.pipeline(args.repeat)
    elif args.name == "concurrency":
        capacity.concurrency(args.n, args.delay, args.pool, workers=args.workers, pin=args.pin,
                             rounds=args.rounds)
    elif args.name == "resume":
        from bench.resume import resume as resume_bench

        resume_bench(args.runs, args.delay)
    elif args.name == "floor":
        from bench.floor import floor as floor_bench

        floor_bench(args.runs)
    elif args.name == "props":
        from bench.props import props as props_bench

        props_bench(args.repeat)
    elif args.name == "takeover":
        from bench.takeover import takeover as takeover_bench

        takeover_bench(args.runs, args.lease, args.delay)
    elif args.name == "encrypt":
        from bench.encrypt import encrypt as encrypt_bench

        encrypt_bench(args.runs, args.rounds)
    elif args.name == "media":
        from bench.media import media as media_bench

        media_bench(args.images)
    else:
        capacity.per_run(args.runs)
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "cluster":
        from bench.cluster import cluster

        cluster(sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "retention":
        from bench.retention import retention

        print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
        retention([int(n) for n in sys.argv[2:]] or [100_000, 1_000_000])
        return
    if len(sys.argv) > 1 and sys.argv[1] == "memory":
        from bench.memory import main as memory_main

        print(f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f} at the start")
        memory_main(sys.argv[2:])
        return
    if len(sys.argv) > 1 and sys.argv[1] in ("pipeline", "concurrency", "per-run", "floor", "resume", "props", "media",
                                                  "takeover", "encrypt"):
        scenario(sys.argv[1:])
        return
    parser = argparse.ArgumentParser()
    parser.add_argument("--deltas", type=int, nargs="+", default=[200, 2000])
    parser.add_argument("--repeat", type=int, default=15)
    args = parser.parse_args()
    workdir = Path(tempfile.mkdtemp(prefix="tambo-bench-"))
    env = {"SQLITE_PATH": str(workdir / "db.sqlite3"), "MODEL_PROVIDER": "offline", "LOG_LEVEL": "WARNING"}
    env.pop("DATABASE_URL", None)
    os.environ.pop("DATABASE_URL", None)
    subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env={**os.environ, **env}, check=True)
    key = subprocess.run([sys.executable, "manage.py", "createapikey", "--project", "bench"], cwd=ROOT,
                         env={**os.environ, **env}, check=True, capture_output=True, text=True).stdout.split()[-1]
    app, app_url = start("tambo_project.asgi:application", env)
    rows = []
    try:
        session = requests.Session()
        session.headers["x-api-key"] = key
        for n in args.deltas:
            body = {"userKey": "bench", "message": {"role": "user", "content": [{"type": "text", "text": f"!stream {n}"}]}}
            measure(session, app_url + "/v1/threads/runs", body)  # warm-up
            real = [measure(session, app_url + "/v1/threads/runs", body) for _ in range(args.repeat)]
            frames_file = workdir / f"frames-{n}.json"
            frames_file.write_text(json.dumps(real[-1][3]))
            base_proc, base_url = start("bench.baseline_app:app", {"BENCH_FRAMES_FILE": str(frames_file)})
            try:
                bare = requests.Session()
                measure(bare, base_url + "/run", body)
                baseline = [measure(bare, base_url + "/run", body) for _ in range(args.repeat)]
            finally:
                base_proc.terminate()
                base_proc.wait()
            rows.append((n, real, baseline))
    finally:
        app.terminate()
        app.wait()
    print()
    print(f"{'deltas':>7} {'events':>7} | {'first event ms':>14} {'baseline':>9} | {'whole run ms':>12} "
          f"{'baseline':>9} | {'events/s':>9} {'baseline':>9} {'ratio':>6}")
    print("-" * 96)
    for n, real, baseline in rows:
        ttfe, base_ttfe = (statistics.median(r[0] for r in s) * 1000 for s in (real, baseline))
        total, base_total = (statistics.median(r[1] for r in s) * 1000 for s in (real, baseline))
        # Streaming rate once the first event is out: the pipeline's per-event cost, without the
        # one-off cost of checking the request and taking the lock.
        eps, base_eps = (statistics.median((r[2] - 1) / max(r[1] - r[0], 1e-9) for r in s) for s in (real, baseline))
        print(f"{n:>7} {real[-1][2]:>7} | {ttfe:>14.2f} {base_ttfe:>9.2f} | {total:>12.1f} {base_total:>9.1f} | "
              f"{eps:>9.0f} {base_eps:>9.0f} {eps / base_eps:>6.2f}")
    print(f"\nmedians of {args.repeat} runs each; the app on SQLite with the offline model; loopback client.")


if __name__ == "__main__":
    main()
