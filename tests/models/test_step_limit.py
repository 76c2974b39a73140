"""Each model call of a multi-step run is admitted and metered, and a run makes at most the project's
`limits.modelCallsPerRun` model calls (docs/abuse-and-limits.md): a model that keeps calling a tool ends
the run with a clear RUN_ERROR instead of calling on."""
from __future__ import annotations

import pytest

from projects.models import Project
from telemetry.models import Usage
from tests.models.conftest import apply_file, openai_model, project_runs
from tests.support.fake_openai import Text, ToolCall, ToolCalls
from tests.support.run_requests import enable_tools
from tests.support.sse import read_events, types

pytestmark = pytest.mark.django_db(transaction=True)


def _calculations(count: int, tokens: int) -> list[ToolCalls]:
    usage = {"prompt_tokens": tokens - 10, "completion_tokens": 10, "total_tokens": tokens}
    return [ToolCalls([ToolCall("calculate", f'{{"expression": "{n}+1"}}', id=f"call_{n}")], usage=usage)
            for n in range(count)]


def test_a_model_that_keeps_calling_a_tool_is_stopped_at_the_step_limit(tmp_path, models_url, oai):
    apply_file(tmp_path, f"""
projects:
  - name: loops
    models: [{openai_model(oai.fake)}]
    limits: {{modelCallsPerRun: 5}}
""")
    enable_tools(Project.objects.get(name="loops"), "calculate")
    oai.script(*_calculations(5, tokens=100))
    runs = project_runs(models_url, "loops")

    thread_id, events = runs.run_new("add one, again and again")

    error = [e for e in events if e["type"] == "RUN_ERROR"]
    assert len(error) == 1 and error[0]["code"] == "STEP_LIMIT_EXCEEDED", types(events)
    assert "5 model calls" in error[0]["message"]
    assert len(oai.requests) == 5
    # Every call metered: the run's usage is the five calls' usage.
    [row] = Usage.objects.filter(thread_id=thread_id)
    assert row.input_tokens + row.output_tokens == 500


def test_each_model_call_of_a_run_is_admitted_against_what_other_runs_spent_meanwhile(tmp_path, models_url, oai):
    apply_file(tmp_path, f"""
projects:
  - name: looping-budget
    models: [{openai_model(oai.fake)}]
    maxOutputTokens: 50
    limits: {{tokensPerDayPerUser: 1000}}
""")
    enable_tools(Project.objects.get(name="looping-budget"), "calculate")
    usage = {"prompt_tokens": 90, "completion_tokens": 10, "total_tokens": 100}
    # Run A's first call streams slowly; run B, of the same user, spends 950 tokens meanwhile. Each
    # reserves about 60 at its start (a short message, 50 tokens of output).
    oai.script(ToolCalls([ToolCall("calculate", ['{"expr', 'ession"', ': "1', '+1"', "}"], id="call_a")],
                         delay=0.4, usage=usage),
               Text("spent", usage={"prompt_tokens": 900, "completion_tokens": 50, "total_tokens": 950}))
    runs = project_runs(models_url, "looping-budget")
    first = runs.post_new("add one")
    assert first.status_code == 200, first.text
    oai.wait_requests(1)

    runs.run_new("spend")
    events = read_events(first)

    # Admitted at its start with 1000 left, A's second call is refused: its reservation, B's 950 and its
    # own 100 beyond the reservation reach the budget.
    error = [e for e in events if e["type"] == "RUN_ERROR"]
    assert len(error) == 1 and error[0]["code"] == "BUDGET_EXCEEDED", types(events)
    assert len(oai.requests) == 2
