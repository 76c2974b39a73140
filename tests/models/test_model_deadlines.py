"""A vendor that trickles cannot hold a run, its thread or a gateway call (providers/deadline.py,
docs/operations-faults.md): through a live server whose deadlines are short, with the OpenAI-compatible
fake and the Anthropic fake. The run ends with RUN_ERROR `LLM_SERVER_ERROR` "did not answer in time",
the thread is free for the next run, the call is charged by estimate and counted against the budget;
a long answer that keeps coming is not cut. Outcomes are asserted, not times: on code with per-read
timeouts only, these runs never end and the client's 30 s read timeout fails the test (the server's
heartbeat is set above it)."""
from __future__ import annotations

from typing import Iterator

import pytest
import requests

from providers.deadline import MSG_TIMEOUT
from telemetry.models import Usage
from tests.models.conftest import ANTHROPIC_KEY, OPENAI_KEY, anthropic_model, apply_file, openai_model, project_runs
from tests.models.test_early_end_usage import QUESTION, _tokens_counted, _usage_of
from tests.runs.conftest import text_of
from tests.support.fake_openai import Text, Trickle
from tests.support.live import LiveServer
from tests.support.sse import read_events, types

pytestmark = pytest.mark.django_db(transaction=True)

EVERY = 0.3  # a trickled byte this often: far inside the per-read timeout


@pytest.fixture(scope="module")
def deadline_server(openai_vendor, anthropic_vendor, django_db_setup, django_db_blocker) -> Iterator[LiveServer]:
    server = LiveServer("model-deadlines", {
        "FAKE_OPENAI_KEY": OPENAI_KEY, "FAKE_ANTHROPIC_KEY": ANTHROPIC_KEY,
        "MODEL_CALL_DEADLINE": "2", "MODEL_IDLE_SECONDS": "2", "MODEL_STREAM_DEADLINE": "10",
        "OPENAI_TIMEOUT": "20", "HEARTBEAT_SECONDS": "60"})
    yield server
    server.stop()


@pytest.fixture
def url(deadline_server, transactional_db) -> Iterator[str]:
    from tests.conftest import wait_for_idle_threads

    yield deadline_server.url
    wait_for_idle_threads()


@pytest.fixture(params=["openai", "anthropic"])
def vendor(request, oai, ant):
    """(name, the test's view of that fake, the project file's model line)."""
    if request.param == "openai":
        return "openai", oai, openai_model(oai.fake)
    return "anthropic", ant, anthropic_model(ant.fake)


def _project(tmp_path, name: str, model: str) -> None:
    apply_file(tmp_path, f"""
projects:
  - name: {name}
    models: [{model}]
    limits: {{tokensPerDay: 1000000}}
""")


def _assert_timed_out(events: list[dict]) -> None:
    assert types(events)[-1] == "RUN_ERROR", types(events)
    assert events[-1]["code"] == "LLM_SERVER_ERROR" and events[-1]["message"] == MSG_TIMEOUT, events[-1]


@pytest.mark.parametrize("after", [(), ("Here is ", "the start")], ids=["before-any-text", "mid-answer"])
def test_a_trickling_vendor_ends_the_run_and_frees_the_thread(tmp_path, url, vendor, after):
    name, fake, model = vendor
    project = f"trickle-{name}-{len(after)}"
    _project(tmp_path, project, model)
    runs = project_runs(url, project)
    fake.script(Trickle(after=Text(list(after), finish_reason=None), every=EVERY))

    response = runs.post_new(QUESTION)
    assert response.status_code == 200, response.text
    thread_id, run_id = response.headers["X-Thread-Id"], response.headers["X-Run-Id"]
    events = read_events(response)

    _assert_timed_out(events)
    assert text_of(events) == "".join(after)
    assert fake.requests[-1].disconnected.wait(timeout=10)  # the vendor's connection was dropped
    # The vendor had the prompt: charged by estimate (and what it sent), counted against the budget.
    row = _usage_of(run_id)
    assert row.outcome == Usage.Outcome.FAILED and row.error_code == "LLM_SERVER_ERROR"
    assert row.input_tokens >= 200 and (row.output_tokens > 0) == bool(after), (row.input_tokens, row.output_tokens)
    assert _tokens_counted(project) == row.input_tokens + row.output_tokens
    # The thread is free: the next run on it answers.
    thread = runs.wait_idle(thread_id)
    fake.script(Text(["Fine ", "now."]))
    assert text_of(runs.run(thread_id, "again?", previousRunId=thread["lastCompletedRunId"])) == "Fine now."


def test_a_stream_that_never_ends_is_cut_by_the_whole_stream_deadline(tmp_path, url, oai):
    # The whole-stream deadline of this server is 10 s; this run waits for it once.
    _project(tmp_path, "forever", openai_model(oai.fake))
    runs = project_runs(url, "forever")
    oai.script(Trickle(after=Text(["Once "], finish_reason=None), every=EVERY, text="more "))

    response = runs.post_new("hi")
    events = read_events(response)

    _assert_timed_out(events)
    assert text_of(events).startswith("Once more more ")
    runs.wait_idle(response.headers["X-Thread-Id"])


def test_a_long_answer_that_keeps_coming_is_not_cut(tmp_path, url, vendor):
    # About 4 s of answer, twice the first-delta deadline, with each gap far inside the idle one.
    name, fake, model = vendor
    _project(tmp_path, f"long-{name}", model)
    runs = project_runs(url, f"long-{name}")
    chunks = [f"part{n} " for n in range(16)]
    fake.script(Text(chunks, delay=0.25))

    _, events = runs.run_new("a long one, please")

    assert types(events)[-1] == "RUN_FINISHED" and text_of(events) == "".join(chunks)


def test_a_gateway_call_to_a_trickling_vendor_ends_with_the_timeout(tmp_path, url, vendor):
    name, fake, model = vendor
    _project(tmp_path, f"gw-trickle-{name}", model)
    from projects.models import ApiKey, Project

    _, key = ApiKey.generate(Project.objects.get(name=f"gw-trickle-{name}"), "tests")
    alias = "gpt-fake" if name == "openai" else "claude-fake"
    fake.script(Trickle(every=EVERY))
    whole = requests.post(url + "/api/chat/completions", timeout=30, headers={"Authorization": f"Bearer {key}"},
                          json={"model": alias, "messages": [{"role": "user", "content": QUESTION}]})
    assert whole.status_code == 502, whole.text
    assert whole.json()["error"]["message"] == MSG_TIMEOUT
    assert fake.requests[-1].disconnected.wait(timeout=10)
