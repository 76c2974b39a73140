"""A synchronous server tool that times out keeps its thread (a thread cannot be stopped), so such
tools run on a bounded executor of their own (runs/toolbox.py `tool_executor`): stuck tools hold at
most SERVER_TOOL_THREADS threads, never the event loop's default ones, and the calls queued behind
them time out without ever starting."""
from __future__ import annotations

import asyncio
import threading

from pydantic import BaseModel

import runs.toolbox as toolbox_module
from runs.toolbox import Toolbox
from tools.registry import ServerTool


class NoArguments(BaseModel):
    pass


def test_timed_out_sync_tools_hold_only_the_tool_threads_and_queued_calls_never_start(settings, monkeypatch):
    settings.SERVER_TOOL_THREADS = 2
    monkeypatch.setattr(toolbox_module, "_tool_executor", None)  # a fresh executor, of the setting's size
    release = threading.Event()
    started: list[str] = []

    def stuck(arguments: NoArguments) -> str:
        started.append(threading.current_thread().name)
        release.wait(60)
        return "too late"

    box = Toolbox(server_tools={"stuck": ServerTool("stuck", "Never answers in time.", NoArguments, stuck)},
                  timeout=0.2)

    async def four_calls():
        return await asyncio.gather(*(box.execute("stuck", {}) for _ in range(4)))

    try:
        results = asyncio.run(four_calls())
    finally:
        release.set()
        toolbox_module.tool_executor().shutdown(wait=True)

    assert [(r.is_error, r.content[0]["text"]) for r in results] == [(True, "Tool stuck timed out after 0.2 s.")] * 4
    # Two threads, both the tools' own; the two calls queued behind them were given up unstarted.
    assert len(started) == 2 and all(name.startswith("tambo-tool") for name in started)
