"""Every model call goes through one door (telemetry/calls.py, docs/architecture.md#the-metered-model-call):
admitted against the project's rates and budgets with its worst case reserved, metered, its usage
recorded and its reservation reconciled when it ends. The source is scanned for call sites outside
the door, and the gateway, a run's steps, a thread name and a transcription are driven through a live
server against the fake vendor."""
from __future__ import annotations

import ast
import threading
import time
from pathlib import Path
from typing import Iterator

import pytest
import requests

from projects.config import Limits, ProjectSettings, TranscriptionSpec, project_settings_save
from projects.limit_models import LimitCounter
from tests.assist.conftest import conversation
from tests.assist.test_generate_name import generate_name
from tests.conftest import Api
from tests.runs.conftest import WEATHER_TOOL, Runs
from tests.support.fake_openai import Stall, Text, ToolCall, ToolCalls
from tests.support.fixtures_openai import Vendor, fake, vendor  # noqa: F401 - fixtures
from tests.support.live import LiveServer
from tests.support.problems import assert_problem
from tests.support.sse import types

ROOT = Path(__file__).resolve().parents[2]
DOOR = "telemetry/calls.py"
# The server's packages that may not call a model but through the door (providers/ is the models
# themselves; clientsdk/ is the Python client, whose `stream` is an HTTP request).
PACKAGES = ("tambo_project", "retention", "gateway", "assist", "runs", "memory", "telemetry", "threads", "tools",
            "projects", "core")
MODEL_METHODS = {"stream", "complete"}
LIMIT_FUNCTIONS = {"call_admit", "call_record", "step_admit", "budget_check"}
# (file, receiver) of `.stream(` calls that are not a model's.
NOT_A_MODEL = {("runs/loop.py", "control"): "RunControl.stream pumps the door's call in a task that a cancel stops"}
# Files that admit or charge against the limits outside the door, and why.
LIMITS_ELSEWHERE = {
    "projects/limits.py": "the limits themselves",
    "telemetry/call_settle.py": "the door's end: the reservation reconciled",
}


def door_violations(path: str, source: str) -> list[str]:
    """`file:line what` for each model call or limits call in `source` that bypasses the door."""
    if path == DOOR:
        return []
    tree = ast.parse(source)
    # Names imported from the limits themselves (the door's own `call_admit` is another function).
    from_limits = {alias.asname or alias.name for node in ast.walk(tree)
                   if isinstance(node, ast.ImportFrom) and node.module == "projects.limits" for alias in node.names}
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module == "providers.transcription" \
                and any(alias.name == "transcribe" for alias in node.names):
            found.append(f"{path}:{node.lineno} imports providers.transcription.transcribe")
        # The limits' functions named at all (called, or handed to db_call), outside their places.
        if path not in LIMITS_ELSEWHERE and (
                (isinstance(node, ast.Attribute) and node.attr in LIMIT_FUNCTIONS
                 and ast.unparse(node.value) in ("limits", "projects.limits"))
                or (isinstance(node, ast.Name) and node.id in LIMIT_FUNCTIONS and node.id in from_limits)):
            found.append(f"{path}:{node.lineno} names the limits' {getattr(node, 'attr', None) or node.id}")
        if not isinstance(node, ast.Call):
            continue
        func = node.func
        if isinstance(func, ast.Attribute):
            name, receiver = func.attr, ast.unparse(func.value)
        elif isinstance(func, ast.Name):
            name, receiver = func.id, ""
        else:
            continue
        if name in MODEL_METHODS and receiver and (path, receiver) not in NOT_A_MODEL:
            found.append(f"{path}:{node.lineno} calls {receiver}.{name}(…)")
        elif name == "transcribe" and receiver:
            found.append(f"{path}:{node.lineno} calls {receiver}.transcribe(…)")
    return found


def test_every_model_call_and_every_charge_goes_through_the_door():
    violations = []
    for package in PACKAGES:
        for file in sorted((ROOT / package).rglob("*.py")):
            if "migrations" in file.parts:
                continue
            path = file.relative_to(ROOT).as_posix()
            violations += door_violations(path, file.read_text())
    assert violations == [], "model calls or limits outside telemetry/calls.py:\n" + "\n".join(violations)


def test_the_scan_finds_a_call_that_bypasses_the_door():
    source = ("from providers import get_provider, transcription\nfrom providers.transcription import transcribe\n"
              "from projects import limits\nfrom projects.limits import step_admit\n"
              "async def f(request, chain, project, target):\n"
              "    await get_provider().complete(request)\n"
              "    async for d in chain.stream(request):\n        pass\n"
              "    limits.call_admit(project=project, user_key=None)\n"
              "    await db_call(step_admit, project=project, user_key=None, usage=None)\n"
              "    await transcription.transcribe(target)\n")

    found = door_violations("assist/names.py", source)  # any file but the door

    assert sorted(line.split(" ", 1)[1] for line in found) == sorted([
        "imports providers.transcription.transcribe", "calls get_provider().complete(…)", "calls chain.stream(…)",
        "names the limits' call_admit", "names the limits' step_admit",
        "calls transcription.transcribe(…)"]), found
    # The door's own source, scanned as any other file would be, holds each kind of call.
    door = " ".join(door_violations("assist/names.py", (ROOT / DOOR).read_text()))
    assert all(call in door for call in (".stream(…)", ".complete(…)", ".transcribe(…)", "call_admit", "step_admit"))


# --- through a live server ---------------------------------------------------------------------------

TOKEN = "one-door-token"


@pytest.fixture(scope="module")
def server(vendor, django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    live = LiveServer("one-door", {"METRICS_TOKEN": TOKEN, "FAKE_KEY": "sk-door"})
    yield live
    live.stop()


def configure(project, vendor, **changes) -> None:
    project_settings_save(project, ProjectSettings.model_validate({
        "models": [{"provider": "openai", "model": "m-1", "baseUrl": vendor.base_url, "apiKey": "env:FAKE_KEY"}],
        **changes}))


def spent(project, user_key: str = "") -> int:
    """Today's token count of the project ("") or one of its users, as the budgets read it."""
    return sum(LimitCounter.objects.filter(project=project, kind="tokens", user_key=user_key)
               .values_list("count", flat=True))


def usage_rows(project, kind: str, count: int) -> list:
    """The `count` usage rows of `kind`, waiting for them (a call's end is recorded after its answer)."""
    from telemetry.models import Usage

    for _ in range(200):
        rows = list(Usage.objects.filter(project=project, kind=kind).order_by("id"))
        if len(rows) >= count:
            return rows
        time.sleep(0.05)
    raise AssertionError(f"{len(rows)} {kind} usage rows, not {count}")


def scrape(server: LiveServer) -> str:
    return requests.get(server.url + "/metrics", headers={"Authorization": f"Bearer {TOKEN}"}, timeout=10).text


def sample(text: str, name: str, **labels: str) -> float:
    for line in text.splitlines():
        if line.startswith(name + "{") and all(f'{k}="{v}"' in line for k, v in labels.items()):
            return float(line.rsplit(" ", 1)[1])
    return 0.0


def chat(server: LiveServer, api_key: str, stream: bool = False) -> requests.Response:
    return requests.post(server.url + "/api/chat/completions", timeout=60, stream=stream,
                         headers={"Authorization": f"Bearer {api_key}"},
                         json={"model": "m-1", "messages": [{"role": "user", "content": "hi"}], "stream": stream})


@pytest.mark.both_dbs  # the reservation's statements differ on SQLite
def test_a_gateway_call_in_flight_holds_its_reservation_and_gives_back_what_it_did_not_use(
        server, api_key, project, vendor, fake: Vendor):
    """Fails on the code before the door: the gateway reserved nothing, so a second call was let in."""
    configure(project, vendor, limits={"tokensPerDay": 1000})
    fake.script(Stall(after=["Hello"], seconds=60), Text("again", usage={"prompt_tokens": 9, "completion_tokens": 1,
                                                                            "total_tokens": 10}))
    first = chat(server, api_key, stream=True)
    assert first.status_code == 200, first.text
    # Kept: a line iterator dropped half-read closes the connection (urllib3 releases it), and the
    # call would end here.
    lines = first.iter_lines()
    next(lines)  # answering: admitted, its worst case (input and output cap) reserved
    held = spent(project)

    second = chat(server, api_key)

    assert held > 1000
    assert second.status_code == 429 and second.json()["error"]["code"] == "budget_exceeded", second.text
    first.close()  # the client leaves: charged the estimate of what was sent and received
    del lines
    [row] = usage_rows(project, "gateway", 1)
    assert row.outcome == "cancelled" and row.input_tokens > 0 and row.output_tokens > 0
    # Given back in the hop that wrote the row, before it: what the call used stays counted.
    assert spent(project) == row.input_tokens + row.output_tokens
    third = chat(server, api_key)
    assert third.status_code == 200, third.text
    assert spent(project) == row.input_tokens + row.output_tokens + 10
    assert len(fake.requests) == 2


def test_each_step_of_a_run_is_admitted_metered_and_charged_with_the_run(server, api_key, project, vendor,
                                                                          fake: Vendor):
    from telemetry.models import Usage

    configure(project, vendor, limits={"tokensPerDay": 100_000})
    fake.script(ToolCalls([ToolCall("launch_rocket", ['{"now": true}'], id="call_x")],
                          usage={"prompt_tokens": 30, "completion_tokens": 4, "total_tokens": 34}),
                Text("Sorry.", usage={"prompt_tokens": 50, "completion_tokens": 2, "total_tokens": 52}))
    before = scrape(server)

    _, events = Runs(Api(server.url, api_key)).run_new("launch it", tools=[WEATHER_TOOL])

    after = scrape(server)
    assert types(events)[-1] == "RUN_FINISHED"
    labels = {"project": "test-project", "kind": "run", "outcome": "completed"}
    assert sample(after, "tambo_model_calls_total", **labels) - sample(before, "tambo_model_calls_total", **labels) == 2
    [row] = Usage.objects.filter(project=project, kind="run")
    assert (row.input_tokens, row.output_tokens) == (80, 6)
    assert spent(project) == 86  # the run's reservation reconciled with both steps


def test_a_thread_name_is_charged_to_its_user_and_its_reservation_reconciled(server, api_key, project, vendor,
                                                                             fake: Vendor):
    configure(project, vendor, limits={"tokensPerDayPerUser": 10_000})
    thread, _ = conversation(project, ("user", "Which city has the most bridges?"), ("assistant", "Hamburg."))
    fake.script(Text("Bridges of Hamburg", usage={"prompt_tokens": 37, "completion_tokens": 5, "total_tokens": 42}))

    assert generate_name(Api(server.url, api_key), thread.id).status_code == 200

    [row] = usage_rows(project, "name", 1)
    assert (row.input_tokens, row.output_tokens, row.user_key) == (37, 5, "alice")
    assert spent(project, "alice") == 42


@pytest.mark.both_dbs  # the reservation's statements differ on SQLite
def test_a_transcription_is_admitted_and_charged_the_vendors_usage_or_the_estimate(server, api_key, project, vendor,
                                                                                    fake: Vendor):
    """Fails on the code before the door: transcriptions were never charged, so the third was let in."""
    from providers.estimate import MEDIA_PART_TOKENS

    configure(project, vendor, limits={"tokensPerDay": MEDIA_PART_TOKENS + 100},
              transcription=TranscriptionSpec(model="whisper-1", base_url=vendor.base_url, api_key="sk-x"))
    fake.script(Text("hello there, bridges"),  # whisper-1 reports no tokens: the estimate
                Text("again", usage={"prompt_tokens": 150, "completion_tokens": 2, "total_tokens": 152}))

    def post():
        return requests.post(f"{server.url}/audio/transcribe", headers={"x-api-key": api_key}, timeout=30,
                             files={"file": ("a.wav", b"RIFF" + bytes(64), "audio/wav")})

    answers = [post(), post(), post()]

    assert [a.status_code for a in answers[:2]] == [200, 200], answers[1].text
    assert_problem(answers[2], 429, "BUDGET_EXCEEDED")
    first, second = usage_rows(project, "transcription", 2)
    assert (first.input_tokens, first.output_tokens, first.model) == (MEDIA_PART_TOKENS, 5, "whisper-1")
    assert (second.input_tokens, second.output_tokens) == (150, 2)
    assert spent(project) == MEDIA_PART_TOKENS + 5 + 152
    assert len(fake.requests) == 2


def test_a_stream_through_the_door_adds_a_bounded_number_of_calls_per_delta():
    """The door's one generator per streamed call, counted: its work per delta is a constant, not a
    function of what came before (tests/runs/test_delta_path_work.py counts the rest of the path)."""
    import asyncio

    from providers.base import ModelRequest, StepEnd, TextDelta
    from telemetry.calls import CallScope, model_stream
    from tests.support.work_count import counting_calls

    class Model:
        name = "fake"

        def __init__(self, size: int):
            self.size = size

        async def stream(self, request):
            for i in range(self.size):
                yield TextDelta(f"w{i} ")
            yield StepEnd("stop", usage={"prompt_tokens": 1, "completion_tokens": self.size,
                                         "total_tokens": self.size + 1})

    class Project:
        name = "p"

    def calls(size: int) -> tuple[int, int]:
        async def go():
            call = model_stream(Model(size), ModelRequest(messages=[]), CallScope(Project(), "run"))
            with counting_calls() as counter:
                async for _ in call:
                    pass
            return counter.calls, call.usage["completion_tokens"]

        bare = Model(size)

        async def floor():
            with counting_calls() as counter:
                async for _ in bare.stream(None):
                    pass
            return counter.calls

        door, used = asyncio.run(go())
        return door - asyncio.run(floor()), used

    small, _ = calls(250)
    large, used = calls(1000)
    assert used == 1000
    per_delta = (large - small) / 750
    # tally.see's isinstance tests and one len: the hop itself is a generator resume, no Python call.
    assert per_delta <= 2, per_delta
    print(f"door: {per_delta:.2f} Python calls per delta over the bare stream")
