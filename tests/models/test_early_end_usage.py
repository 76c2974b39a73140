"""A model call that ends early is charged (docs/abuse-and-limits.md, providers/usage_estimate.py): a run the
client cancels or leaves, and a gateway stream it leaves, record the tokens sent and received, estimated
where the vendor reported none, and they count against the token budgets; a vendor that never reports
usage is charged by the estimate. With the OpenAI-compatible fake and the Anthropic fake."""
from __future__ import annotations

import time

import pytest
import requests

from projects.limit_models import LimitCounter
from telemetry.models import Usage
from tests.models.conftest import anthropic_model, apply_file, openai_model, project_runs
from tests.support.fake_openai import Stall, Text
from tests.support.sse import iter_events

pytestmark = pytest.mark.django_db(transaction=True)

QUESTION = "tell me " * 100  # 800 characters: about 200 tokens by the estimate


def _project(tmp_path, name: str, model: str, budget: int = 0) -> None:
    limits = f"\n    limits: {{tokensPerDayPerUser: {budget}}}" if budget else ""
    apply_file(tmp_path, f"""
projects:
  - name: {name}
    models: [{model}]{limits}
""")


def _until_text(events) -> None:
    """Reads the run's events until the model's first words arrived."""
    for event in events:
        if event["type"] == "TEXT_MESSAGE_CONTENT":
            return
    raise AssertionError("the run ended before any text")


def _usage_of(run_id: str, timeout: float = 15.0) -> Usage:
    deadline = time.monotonic() + timeout
    while (row := Usage.objects.filter(run_id=run_id).first()) is None:
        assert time.monotonic() < deadline, f"no usage recorded for {run_id}"
        time.sleep(0.05)
    return row


def _tokens_counted(project_name: str) -> int:
    return sum(LimitCounter.objects.filter(project__name=project_name, kind="tokens").values_list("count", flat=True))


def _cancelled_run(runs, leave: str) -> str:
    response = runs.post_new(QUESTION)
    assert response.status_code == 200, response.text
    return _cancelled_run_of(runs, response, leave)


def _cancelled_run_of(runs, response: requests.Response, leave: str) -> str:
    run_id, thread_id = response.headers["X-Run-Id"], response.headers["X-Thread-Id"]
    events = iter_events(response)
    _until_text(events)
    if leave == "cancel":
        cancelled = runs.api.delete(f"/v1/threads/{thread_id}/runs/{run_id}")
        assert cancelled.status_code == 200, cancelled.text
        for _ in events:  # the stream ends with the cancel (docs/protocol.md#the-event-stream)
            pass
    else:
        response.close()  # the client goes away mid-stream
    runs.wait_idle(thread_id)
    return run_id


@pytest.mark.parametrize("leave", ["cancel", "disconnect"])
@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
def test_a_run_left_early_records_its_tokens_and_they_count(tmp_path, models_url, oai, ant, vendor, leave):
    fake, model = (oai, openai_model(oai.fake)) if vendor == "openai" else (ant, anthropic_model(ant.fake))
    name = f"early-{vendor}-{leave}"
    _project(tmp_path, name, model, budget=100_000)
    fake.script(Stall(after=Text(["Here is ", "the start of ", "a long answer"]), seconds=30))
    runs = project_runs(models_url, name)

    run_id = _cancelled_run(runs, leave)

    row = _usage_of(run_id)
    assert row.outcome == Usage.Outcome.CANCELLED
    assert row.input_tokens >= 200 and row.output_tokens > 0, (row.input_tokens, row.output_tokens)
    assert _tokens_counted(name) == row.input_tokens + row.output_tokens


def test_a_user_who_cancels_every_run_reaches_the_budget(tmp_path, models_url, oai):
    _project(tmp_path, "cancels", openai_model(oai.fake), budget=1000)
    runs = project_runs(models_url, "cancels")
    answers = []
    for _ in range(10):
        oai.script(Stall(after=Text(["Here is ", "the start"]), seconds=30))
        response = runs.post_new(QUESTION)
        if response.status_code != 200:
            oai.forget_script()
            break
        answers.append(_cancelled_run_of(runs, response, "cancel"))

    assert response.status_code == 429 and response.json()["code"] == "BUDGET_EXCEEDED", response.text
    # Each cancelled run was charged about 260 tokens (the question, the tools' framing, a few words).
    assert 2 <= len(answers) <= 5 and len(oai.requests) == len(answers)


def test_a_vendor_that_reports_no_usage_is_charged_the_estimate(tmp_path, models_url, oai):
    _project(tmp_path, "silent-vendor", openai_model(oai.fake), budget=100_000)
    oai.script(Text(["An answer ", "with no usage."], reports_usage=False))
    runs = project_runs(models_url, "silent-vendor")

    thread_id, _ = runs.run_new(QUESTION)

    [run] = Usage.objects.filter(thread_id=thread_id)
    assert oai.requests[0].body["stream_options"]["include_usage"] is True  # asked, not answered
    assert run.input_tokens >= 200 and run.output_tokens > 0
    assert _tokens_counted("silent-vendor") == run.input_tokens + run.output_tokens


def test_a_gateway_stream_the_client_leaves_records_its_tokens(tmp_path, models_url, oai):
    apply_file(tmp_path, f"""
projects:
  - name: gateway-left
    models: [{openai_model(oai.fake)}]
    limits: {{tokensPerDay: 100000}}
""")
    from projects.models import ApiKey, Project

    _, key = ApiKey.generate(Project.objects.get(name="gateway-left"), "tests")
    oai.script(Stall(after=Text(["Here is ", "the start of ", "a long answer"]), seconds=30))
    response = requests.post(models_url + "/api/chat/completions", stream=True, timeout=30,
                             headers={"Authorization": f"Bearer {key}"},
                             json={"model": "gpt-fake", "stream": True,
                                   "messages": [{"role": "user", "content": QUESTION}]})
    assert response.status_code == 200, response.text
    next(response.iter_lines())
    response.close()

    deadline = time.monotonic() + 15
    while (row := Usage.objects.filter(project__name="gateway-left", kind=Usage.Kind.GATEWAY).first()) is None:
        assert time.monotonic() < deadline, "no usage recorded for the gateway call"
        time.sleep(0.05)
    assert row.input_tokens >= 200 and row.output_tokens > 0, (row.input_tokens, row.output_tokens)
    assert _tokens_counted("gateway-left") == row.input_tokens + row.output_tokens
