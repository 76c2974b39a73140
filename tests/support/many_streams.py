"""Many run streams at once from one asyncio client (httpx), for capacity tests and benchmarks."""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import dataclass, field
from typing import Callable

import httpx

from tests.support.sse import aframes_of, data_of


@dataclass
class StreamResult:
    status: int = 0
    events: list[str] = field(default_factory=list)  # event types, in order
    text: str = ""
    run_started_after: float | None = None  # seconds from the request to RUN_STARTED
    error: str | None = None

    @property
    def finished(self) -> bool:
        return self.status == 200 and bool(self.events) and self.events[-1] == "RUN_FINISHED"


@dataclass
class Overlap:
    """How many streams were open (RUN_STARTED seen, end not yet) at once."""

    open: int = 0
    peak: int = 0

    def enter(self) -> None:
        self.open += 1
        self.peak = max(self.peak, self.open)

    def leave(self) -> None:
        self.open -= 1


async def one_stream(client: httpx.AsyncClient, url: str, body: dict, overlap: Overlap) -> StreamResult:
    result = StreamResult()
    began = time.perf_counter()
    opened = False
    try:
        async with client.stream("POST", url, json=body) as response:
            result.status = response.status_code
            if response.status_code != 200:
                result.error = (await response.aread()).decode(errors="replace")[:300]
                return result
            async for frame in aframes_of(response.aiter_bytes()):
                event = data_of(frame)
                if event is None:
                    continue
                result.events.append(event["type"])
                if event["type"] == "RUN_STARTED":
                    result.run_started_after = time.perf_counter() - began
                    overlap.enter()
                    opened = True
                elif event["type"] == "TEXT_MESSAGE_CONTENT":
                    result.text += event["delta"]
    except httpx.HTTPError as exc:
        result.error = f"{type(exc).__name__}: {exc}"
    finally:
        if opened:
            overlap.leave()
    return result


async def run_streams(base_url: str, api_key: str, n: int, text: str, timeout: float = 120.0,
                      ) -> tuple[list[StreamResult], Overlap]:
    """Starts `n` runs on new threads together; returns each stream's result and the overlap."""
    overlap = Overlap()
    limits = httpx.Limits(max_connections=n + 10, max_keepalive_connections=n + 10)
    async with httpx.AsyncClient(base_url=base_url, headers={"x-api-key": api_key}, limits=limits,
                                 timeout=timeout) as client:
        bodies = [{"userKey": f"user-{i}", "message": {"role": "user", "content": [{"type": "text", "text": text}]}}
                  for i in range(n)]
        results = await asyncio.gather(*(one_stream(client, "/v1/threads/runs", b, overlap) for b in bodies))
    return list(results), overlap


class Sampler:
    """Calls `probe()` every `interval` seconds on a thread and keeps the largest value seen."""

    def __init__(self, probe: Callable[[], float], interval: float = 0.05):
        self.probe, self.interval = probe, interval
        self.peak = 0.0
        self.samples = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def __enter__(self) -> "Sampler":
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, self.probe())
                self.samples += 1
            except Exception:  # noqa: BLE001 - a failed sample is skipped, not fatal
                pass
            self._stop.wait(self.interval)
