"""`bin/bench media`: the server's memory while it serves a thread full of images (issue 24).

Starts the app on SQLite, stores `--images` user messages each holding a 1 MB PNG (through real runs,
offline model), then reads the thread's messages back: page by page (`GET …/messages?limit=100`,
which stops before MESSAGE_PAGE_BYTES), and whole (`GET /v1/threads/{id}`). For each it prints the
server process's peak resident memory (VmHWM) measured in a fresh server, beside the bytes of images
the thread holds, and the number of pages. The test suite checks the page cut by bytes
(tests/threads/test_message_page_bytes.py); the memory belongs here.
"""
from __future__ import annotations

import base64

import requests

from bench.capacity import peak_rss_mb, prepare, sqlite_env
from bench.run import ROOT, free_port
from tests.support.images import png

SIDE = 580  # a 580 x 580 random RGB PNG: about 1 MB


def start(app: str, env: dict[str, str]):
    """The app under uvicorn, waited for up to two minutes (a loaded machine starts it slowly)."""
    import os
    import subprocess
    import sys
    import time

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "uvicorn", app, "--port", str(port), "--no-access-log",
                             "--log-level", "warning"], cwd=ROOT, env={**os.environ, **env})
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        try:
            if requests.get(url + "/healthz", timeout=2).ok:
                return proc, url
        except requests.RequestException:
            time.sleep(0.2)
    proc.kill()
    raise SystemExit(f"{app} did not start")


def _store(url: str, key: str, images: int) -> str:
    session = requests.Session()
    session.headers["x-api-key"] = key
    thread_id, previous = None, None
    for seed in range(images):
        blob = base64.b64encode(png(SIDE, SIDE, seed=seed)).decode()
        body = {"userKey": "bench", "message": {"role": "user", "content": [
            {"type": "text", "text": f"image {seed}"},
            {"type": "resource", "resource": {"name": f"{seed}.png", "mimeType": "image/png", "blob": blob}}]}}
        if previous:
            body["previousRunId"] = previous
        path = f"/v1/threads/{thread_id}/runs" if thread_id else "/v1/threads/runs"
        with session.post(url + path, json=body, stream=True, timeout=120) as response:
            response.raise_for_status()
            thread_id = thread_id or response.headers["X-Thread-Id"]
            for _ in response.iter_content(chunk_size=None):
                pass
        previous = session.get(f"{url}/v1/threads/{thread_id}", params={"userKey": "bench"},
                               timeout=120).json()["lastCompletedRunId"]
    return thread_id


def _read_pages(url: str, key: str, thread_id: str) -> int:
    pages, cursor = 0, None
    while True:
        params = {"userKey": "bench", "limit": 100, **({"cursor": cursor} if cursor else {})}
        page = requests.get(f"{url}/v1/threads/{thread_id}/messages", params=params, timeout=120,
                            headers={"x-api-key": key}).json()
        pages += 1
        if not page["hasMore"]:
            return pages
        cursor = page["nextCursor"]


def _read_whole(url: str, key: str, thread_id: str) -> int:
    requests.get(f"{url}/v1/threads/{thread_id}", params={"userKey": "bench"}, timeout=300,
                 headers={"x-api-key": key}).raise_for_status()
    return 1


def media(images: int) -> None:
    env = {**sqlite_env(), "MODEL_PROVIDER": "offline", "OFFLINE_MODEL_DELAY": "0", "RUN_WATCH_INTERVAL": "60"}
    key = prepare(env)
    app, url = start("tambo_project.asgi:application", env)
    try:
        thread_id = _store(url, key, images)
    finally:
        app.terminate(), app.wait()
    print(f"\nmedia: a thread of {images} user messages with a {len(png(SIDE, SIDE)) / 1e6:.2f} MB PNG each")
    print(f"{'read':<34} {'pages':>6} {'server peak RSS MB':>19} {'idle server MB':>15}")
    for label, read in (("GET …/messages?limit=100, paged", _read_pages), ("GET /v1/threads/{id} (whole)", _read_whole)):
        app, url = start("tambo_project.asgi:application", env)
        try:
            requests.get(f"{url}/v1/threads", params={"userKey": "bench"}, headers={"x-api-key": key}, timeout=60)
            idle = peak_rss_mb(app.pid)
            pages = read(url, key, thread_id)
            peak = peak_rss_mb(app.pid)
        finally:
            app.terminate(), app.wait()
        print(f"{label:<34} {pages:>6} {peak:>19.0f} {idle:>15.0f}")
