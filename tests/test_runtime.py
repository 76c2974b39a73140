"""The process runtime (core/runtime.py) and this server's parts (tambo_project/runtime.py): started once
in order, stopped in reverse, caches emptied; the ASGI lifespan starts and stops it."""
from __future__ import annotations

import asyncio
import logging

import pytest

from core.runtime import Part, Runtime


def _recording_runtime(calls: list[str], names=("a", "b", "c"), fails: str | None = None) -> Runtime:
    runtime = Runtime()

    def step(name: str, what: str):
        def sync() -> None:
            calls.append(f"{what} {name}")
            if what == "start" and name == fails:
                raise RuntimeError(f"{name} did not start")

        async def coroutine() -> None:
            await asyncio.sleep(0)
            sync()

        # Plain functions and coroutine functions alike.
        return coroutine if name == "b" else sync

    runtime.add(*(Part(name, start=step(name, "start"), stop=step(name, "stop")) for name in names))
    runtime.cache_register("a cache", lambda: calls.append("emptied"))
    return runtime


def test_it_starts_the_parts_in_order_and_stops_them_in_reverse_then_empties_the_caches():
    calls: list[str] = []
    runtime = _recording_runtime(calls)

    async def go() -> None:
        await runtime.start()
        assert runtime.started == ["a", "b", "c"]
        await runtime.stop()

    asyncio.run(go())
    assert calls == ["start a", "start b", "start c", "stop c", "stop b", "stop a", "emptied"]


def test_a_failed_start_stops_the_parts_started_before_it_in_reverse_and_raises():
    calls: list[str] = []
    runtime = _recording_runtime(calls, names=("a", "b", "c", "d"), fails="c")

    async def go() -> None:
        with pytest.raises(RuntimeError, match="c did not start"):
            await runtime.start()
        assert not runtime.running()

    asyncio.run(go())
    # c failed: it undoes its own half start; d never started.
    assert calls == ["start a", "start b", "start c", "stop b", "stop a", "emptied"]


def test_starting_twice_on_one_loop_starts_each_part_once():
    calls: list[str] = []
    runtime = _recording_runtime(calls)

    async def go() -> None:
        await runtime.start()
        await runtime.start()
        assert runtime.running()
        await runtime.stop()
        await runtime.stop()  # stopped already: nothing more
        assert not runtime.running()

    asyncio.run(go())
    assert calls.count("start a") == 1 and calls.count("stop a") == 1 and calls.count("emptied") == 1


def test_it_answers_running_only_on_the_loop_it_was_started_on():
    runtime = _recording_runtime([])
    seen: dict[str, bool] = {}

    async def on_another_loop() -> None:
        seen["another loop"] = runtime.running()

    async def go() -> None:
        await runtime.start()
        seen["its loop"] = runtime.running()
        # A thread with a loop of its own (an embedding server's second loop, a test's asyncio.run).
        await asyncio.to_thread(asyncio.run, on_another_loop())
        await runtime.stop()
        seen["after stop"] = runtime.running()

    assert not runtime.running()  # no loop at all
    asyncio.run(go())
    assert seen == {"its loop": True, "another loop": False, "after stop": False}


def test_a_part_that_fails_to_stop_does_not_keep_the_others_running(caplog):
    calls: list[str] = []
    runtime = Runtime()

    def broken() -> None:
        raise OSError("gone")

    runtime.add(Part("first", stop=lambda: calls.append("stop first")), Part("broken", stop=broken),
                Part("last", stop=lambda: calls.append("stop last")))
    runtime.cache_register("a cache", lambda: calls.append("emptied"))

    async def go() -> None:
        await runtime.start()
        await runtime.stop()

    with caplog.at_level(logging.WARNING, logger="core.runtime"):
        asyncio.run(go())
    assert calls == ["stop last", "stop first", "emptied"]
    assert "Stopping broken failed" in caplog.text


def test_a_part_name_is_added_once():
    runtime = Runtime()
    runtime.add(Part("watcher"))
    with pytest.raises(ValueError):
        runtime.add(Part("watcher"))


# --- this server's parts ----------------------------------------------------------------------------

def test_the_server_stops_its_runs_first_then_the_event_log_writer_then_the_watcher_then_the_clients():
    from tambo_project.runtime import SERVER_PARTS

    stops = [part.name for part in reversed(SERVER_PARTS) if part.stop is not None]
    order = ["runs", "event-log writer", "run watcher", "memory extractions", "MCP sessions", "model clients"]
    assert [name for name in stops if name in order] == order


@pytest.mark.django_db(transaction=True)
def test_the_server_runtime_runs_the_watcher_and_the_writer_and_forgets_the_model_clients_when_it_stops(
        monkeypatch):
    import providers
    from core.runtime import process_runtime
    from runs.control import RunControl, watcher
    from runs.stream.feeds import flusher
    from tambo_project.runtime import server_runtime

    # The runs part's stop drains the process's watcher: a later test in this process takes runs over again.
    monkeypatch.setattr(watcher, "draining", False)
    seen: dict[str, object] = {}

    async def go() -> None:
        runtime = server_runtime()
        await runtime.start()
        seen["running"] = process_runtime.running()
        seen["watcher"], seen["writer"] = watcher._task, flusher._task
        seen["lane"] = watcher._lane  # the leases' renewal (runs/renewal.py), started with the watcher
        providers.get_provider()  # a model client made while it runs
        control = RunControl("run_in_runtime")
        control.settle("completed")
        watcher.register(control)  # the runtime started the watcher: no second task
        seen["same watcher"] = watcher._task is seen["watcher"]
        watcher.unregister(control)
        await runtime.stop()
        seen["running after"] = process_runtime.running()

    asyncio.run(go())
    assert seen["running"] and not seen["running after"]
    assert seen["watcher"] is not None and seen["writer"] is not None and seen["same watcher"]
    assert seen["watcher"].cancelled() and seen["writer"].cancelled()
    assert watcher._task is None and flusher._task is None
    assert watcher._lane is None and seen["lane"] is not None and not seen["lane"]._thread.is_alive()
    assert providers._made == []  # closed, then forgotten: a runtime started again makes new clients


def test_the_lifespan_starts_and_stops_the_runtime_and_fails_the_start_up_when_a_part_fails(monkeypatch):
    calls: list[str] = []
    monkeypatch.setattr("tambo_project.lifespan._chain_stop_signals", lambda loop: None)

    def lifespan_messages(runtime: Runtime, messages: list[str]) -> list[dict]:
        from tambo_project.lifespan import Lifespan

        monkeypatch.setattr("tambo_project.lifespan.server_runtime", lambda: runtime)
        sent: list[dict] = []
        incoming = iter(messages)

        async def receive() -> dict:
            return {"type": next(incoming)}

        async def send(message: dict) -> None:
            sent.append(message)

        asyncio.run(Lifespan(None)({"type": "lifespan"}, receive, send))
        return sent

    sent = lifespan_messages(_recording_runtime(calls), ["lifespan.startup", "lifespan.shutdown"])
    assert [m["type"] for m in sent] == ["lifespan.startup.complete", "lifespan.shutdown.complete"]
    assert calls == ["start a", "start b", "start c", "stop c", "stop b", "stop a", "emptied"]

    calls.clear()
    sent = lifespan_messages(_recording_runtime(calls, fails="b"), ["lifespan.startup"])
    assert [m["type"] for m in sent] == ["lifespan.startup.failed"]
    assert "b did not start" in sent[0]["message"]
    assert calls == ["start a", "start b", "stop a", "emptied"]


@pytest.mark.django_db(transaction=True)
def test_a_run_registering_while_the_runtime_stops_does_not_start_the_stopped_watcher_again(monkeypatch):
    from runs.control import RunControl, Watcher

    runtime = Runtime()
    watcher = Watcher()
    monkeypatch.setattr("runs.control.process_runtime", runtime)
    straggler = RunControl("run_straggling")
    straggler.settle("completed")
    # Stopped in reverse: the watcher first, then a run registers (a straggler of the shutdown).
    runtime.add(Part("straggler", stop=lambda: watcher.register(straggler)),
                Part("run watcher", start=watcher.start, stop=watcher.stop))
    seen: dict[str, object] = {}

    async def go() -> None:
        await runtime.start()
        seen["started"] = watcher._task
        await runtime.stop()
        seen["after stop"] = watcher._task
        watcher.unregister(straggler)
        # No runtime on this loop any more: a run registering starts the watcher itself (the fallback).
        watcher.register(straggler)
        seen["fallback"] = watcher._task
        watcher.unregister(straggler)
        await watcher.stop()

    asyncio.run(go())
    assert seen["started"] is not None
    assert seen["after stop"] is None  # before the runtime, a register always started it again
    assert seen["fallback"] is not None
