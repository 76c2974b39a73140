"""A real Prometheus (Debian's) scrapes a two-worker server started as deployments start it
(`tambo-server serve --workers 2`): the counts it stores are the runs and tokens the test made, summed
over both processes, none left over from an earlier start, and a worker killed and restarted by uvicorn
loses none of them (prometheus-client's multiprocess mode)."""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import requests

from tests.conftest import Api, require_part
from tests.support.live import LOG_DIR, LiveServer, free_port
from tests.support.sse import read_events

TOKEN = "prom-scrape-token"
RUNS = 6


def _wait(condition, what: str, timeout: float = 60.0):
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.2)


def _stale_samples(directory: Path) -> None:
    """The sample file a process of an earlier start left: 100 completed runs, which must not count."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    stale = MmapedDict(str(directory / "counter_999999.db"))
    stale.write_value(mmap_key("tambo_runs", "tambo_runs_total", ["project", "model", "outcome"],
                               ["test-project", "offline", "completed"], ""), 100.0, 0.0)
    stale.close()


@pytest.fixture
def two_workers(transactional_db, tmp_path):
    directory = tmp_path / "multiproc"
    directory.mkdir()
    _stale_samples(directory)
    server = LiveServer("metrics-2w", {"PROMETHEUS_MULTIPROC_DIR": str(directory), "METRICS_TOKEN": TOKEN,
                                        "OFFLINE_MODEL_DELAY": "0"}, args=("--workers", "2"), through_cli=True,
                        start_timeout=120.0)  # two processes importing the app on two busy cores
    try:
        yield server, directory
    finally:
        server.stop()


@pytest.fixture
def prometheus(two_workers, tmp_path):
    binary = shutil.which("prometheus")
    require_part(binary is not None, "apt-get install prometheus")
    server, _ = two_workers
    port = free_port()
    config = tmp_path / "prometheus.yml"
    config.write_text(f"""
global: {{scrape_interval: 1s, scrape_timeout: 1s}}
scrape_configs:
  - job_name: tambo
    metrics_path: /metrics
    authorization: {{credentials: {TOKEN}}}
    static_configs: [{{targets: ["127.0.0.1:{server.port}"]}}]
""")
    LOG_DIR.mkdir(parents=True, exist_ok=True)
    log = open(LOG_DIR / f"prometheus-{port}.log", "wb")
    process = subprocess.Popen([binary, f"--config.file={config}", f"--storage.tsdb.path={tmp_path / 'tsdb'}",
                                f"--web.listen-address=127.0.0.1:{port}"], stdout=log, stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait(lambda: _ready(url), "Prometheus to start")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=20)
        log.close()


def _ready(url: str) -> bool:
    try:
        return requests.get(url + "/-/ready", timeout=1).status_code == 200
    except requests.RequestException:
        return False


def _query(url: str, expression: str) -> float | None:
    answer = requests.get(url + "/api/v1/query", params={"query": expression}, timeout=5).json()
    result = answer["data"]["result"]
    return float(result[0]["value"][1]) if result else None


def _children(pid: int) -> list[int]:
    """uvicorn's worker processes under `pid` (not multiprocessing's resource tracker)."""
    pids = [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]
    return [p for p in pids if b"spawn_main" in _cmdline(p)]


def _cmdline(pid: int) -> bytes:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes()
    except FileNotFoundError:
        return b""


def test_prometheus_stores_the_runs_and_tokens_of_a_two_worker_server(two_workers, prometheus, api_key):
    from telemetry.models import Usage

    server, directory = two_workers
    api = Api(server.url, api_key)
    for index in range(RUNS):
        # A fresh connection each time, so the kernel may hand each to either worker.
        response = requests.post(server.url + "/v1/threads/runs", json={
            "userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": f"hi {index}"}]}},
            headers={"x-api-key": api_key, "Connection": "close"}, stream=True, timeout=30)
        assert list(read_events(response))[-1]["type"] == "RUN_FINISHED"
    output_tokens = sum(Usage.objects.values_list("output_tokens", flat=True))
    assert Usage.objects.count() == RUNS and output_tokens > 0
    completed = 'sum(tambo_runs_total{project="test-project",outcome="completed"})'
    assert _wait(lambda: _query(prometheus, completed) == RUNS, f"{completed} == {RUNS}")
    assert _query(prometheus, 'sum(tambo_tokens_total{type="output"})') == output_tokens
    assert _query(prometheus, "sum(tambo_run_duration_seconds_count)") == RUNS

    # Kill a worker that wrote counts; uvicorn starts another, and the dead one's counts still add up.
    workers = _children(server.process.pid)
    assert len(workers) == 2
    wrote = [pid for pid in workers if (directory / f"counter_{pid}.db").exists()]
    assert wrote, os.listdir(directory)
    os.kill(wrote[0], signal.SIGKILL)
    _wait(lambda: len(set(_children(server.process.pid)) - set(workers)) == 1, "uvicorn to replace the worker")
    more = api.post("/v1/threads/runs", {"userKey": "alice", "message": {
        "role": "user", "content": [{"type": "text", "text": "after the restart"}]}}, stream=True)
    assert list(read_events(more))[-1]["type"] == "RUN_FINISHED"
    assert _wait(lambda: _query(prometheus, completed) == RUNS + 1, f"{completed} == {RUNS + 1}")


def _environ(pid: int) -> dict[str, str]:
    pairs = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(pair.decode(errors="replace").split("=", 1) for pair in pairs if b"=" in pair)


def test_tambo_server_with_two_workers_makes_its_own_folder_and_every_scrape_sums_both(transactional_db, api_key):
    server = LiveServer("metrics-2w-cli", {"METRICS_TOKEN": TOKEN, "OFFLINE_MODEL_DELAY": "0"},
                        args=("--workers", "2"), through_cli=True, start_timeout=120.0)
    try:
        workers = _wait(lambda: len(_children(server.process.pid)) == 2 and _children(server.process.pid),
                        "two workers")
        folders = {_environ(pid).get("PROMETHEUS_MULTIPROC_DIR") for pid in workers}
        [folder] = folders
        assert folder and Path(folder).is_dir()
        for index in range(RUNS):
            response = requests.post(server.url + "/v1/threads/runs", json={
                "userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": f"hi {index}"}]}},
                headers={"x-api-key": api_key, "Connection": "close"}, stream=True, timeout=30)
            assert list(read_events(response))[-1]["type"] == "RUN_FINISHED"
        counts = []
        for _ in range(4):
            # Each scrape on a new connection, answered by either worker: each must see all the runs.
            text = requests.get(server.url + "/metrics", timeout=10, headers={
                "Authorization": f"Bearer {TOKEN}", "Connection": "close"}).text
            counts.append(sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines()
                              if line.startswith("tambo_runs_total{") and 'outcome="completed"' in line))
        assert counts == [RUNS] * 4
    finally:
        server.stop()
    assert not Path(folder).exists()  # removed when the server stopped
