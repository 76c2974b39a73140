"""Token budgets (docs/abuse-and-limits.md): the fake vendor reports each call's usage; two server processes on
one database count it together, and a run that crosses its budget makes no further model call."""
from __future__ import annotations

from typing import Iterator

import pytest
import requests

from projects.config import Limits, ProjectSettings, project_settings_save
from projects.limit_models import LimitCounter
from tests.support.fake_openai import Text, ToolCall, ToolCalls
from tests.support.fixtures_openai import Vendor, fake, vendor  # noqa: F401 - fixtures
from tests.support.live import LiveServer, openai_live_server
from tests.support.problems import assert_problem
from tests.support.sse import read_events, types

pytestmark = pytest.mark.django_db(transaction=True)


def usage(total: int) -> dict[str, int]:
    return {"prompt_tokens": total - 10, "completion_tokens": 10, "total_tokens": total}


@pytest.fixture(scope="module")
def servers(vendor, django_db_setup, django_db_blocker) -> Iterator[list[str]]:
    with openai_live_server("budget-a", vendor.base_url, "sk-test", OPENAI_MODEL="fake") as first, \
            openai_live_server("budget-b", vendor.base_url, "sk-test", OPENAI_MODEL="fake") as second:
        yield [first.url, second.url]


def budget(project, **values: int) -> None:
    project_settings_save(project, ProjectSettings(limits=Limits(**values)))


def run(base_url: str, api_key: str, user: str = "alice", text: str = "hi") -> requests.Response:
    response = requests.post(base_url + "/v1/threads/runs", stream=True, timeout=60, headers={"x-api-key": api_key},
                             json={"userKey": user, "message": {"role": "user",
                                                                "content": [{"type": "text", "text": text}]}})
    response.events = read_events(response) if response.status_code == 200 else []
    return response


def test_the_user_budget_counts_the_vendors_usage_across_two_processes(servers, api_key, project, fake: Vendor):
    budget(project, tokens_per_day_per_user=150)
    fake.script(Text("one", usage=usage(100)), Text("two", usage=usage(100)), Text("bob's", usage=usage(40)))

    first = run(servers[0], api_key)
    second = run(servers[1], api_key)  # 100 spent of 150: let in, and it spends 100 more
    third = run(servers[0], api_key)
    other = run(servers[1], api_key, user="bob")

    assert [types(r.events)[-1] for r in (first, second, other)] == ["RUN_FINISHED"] * 3
    assert_problem(third, 429, "BUDGET_EXCEEDED")
    assert 1 <= int(third.headers["Retry-After"]) <= 86400
    assert len(fake.requests) == 3
    counted = dict(LimitCounter.objects.filter(kind="tokens").values_list("user_key", "count"))
    assert counted == {"alice": 200, "bob": 40}


@pytest.mark.both_dbs
def test_the_project_budget_counts_every_user(servers, api_key, project, fake: Vendor):
    budget(project, tokens_per_day=100)
    fake.script(Text("one", usage=usage(100)))

    assert types(run(servers[0], api_key, user="u1").events)[-1] == "RUN_FINISHED"
    assert_problem(run(servers[1], api_key, user="u2"), 429, "BUDGET_EXCEEDED")


def test_a_run_crossing_its_budget_makes_no_further_model_call(servers, api_key, project, fake: Vendor):
    from tools.models import ProjectTool

    ProjectTool.objects.create(project=project, name="calculate")
    budget(project, tokens_per_day_per_user=100)
    # A server tool: without the budget the run would call the model again with the tool's result.
    fake.script(ToolCalls([ToolCall("calculate", '{"expression": "1 + 1"}')], usage=usage(160)))

    crossed = run(servers[0], api_key)

    assert types(crossed.events)[-1] == "RUN_ERROR"
    assert crossed.events[-1]["code"] == "BUDGET_EXCEEDED"
    assert len(fake.requests) == 1
    assert LimitCounter.objects.get(kind="tokens", user_key="alice").count == 160
    assert_problem(run(servers[1], api_key), 429, "BUDGET_EXCEEDED")


def test_without_limits_no_counter_is_written(servers, api_key, project, fake: Vendor):
    from projects.config import Limits, ProjectSettings, project_settings_save

    # Every limit off, the server's default run rate included (0 written out).
    project_settings_save(project, ProjectSettings(limits=Limits(runs_per_minute=0)))
    fake.script(Text("free", usage=usage(100)))

    assert types(run(servers[0], api_key).events)[-1] == "RUN_FINISHED"
    assert LimitCounter.objects.count() == 0


def test_a_project_nobody_configured_counts_its_runs_project_wide_only(servers, api_key, project, fake: Vendor):
    # The server's default run rate (DEFAULT_RUNS_PER_MINUTE): one count for the project, none per user
    # and no token count (there is no default token budget).
    fake.script(Text("counted", usage=usage(100)))

    assert types(run(servers[0], api_key).events)[-1] == "RUN_FINISHED"
    assert list(LimitCounter.objects.values_list("user_key", "kind", "count")) == [("", "runs", 1)]


def test_runs_started_together_overshoot_the_budget_by_one_reservation_at_most(servers, api_key, project,
                                                                              fake: Vendor):
    from concurrent.futures import ThreadPoolExecutor

    budget(project, tokens_per_day=1000)
    # Each call uses 500 tokens; the run's reservation is its message and the output default (about 1,010).
    reservation = 1010
    default = fake.fake.default_reply
    fake.fake.default_reply = Text(["a", "slow", "answer"], delay=0.05, usage=usage(500))
    try:
        with ThreadPoolExecutor(40) as pool:
            answers = list(pool.map(lambda n: run(servers[n % 2], api_key, user=f"u{n}"), range(40)))
    finally:
        fake.fake.default_reply = default

    admitted = [a for a in answers if a.status_code == 200]
    assert all(a.status_code in (200, 429) for a in answers)
    # Admitted tokens: at most the budget plus one call's reservation (before: all 40, 20,000 tokens).
    assert len(fake.requests) == len(admitted) and len(fake.requests) * 500 <= 1000 + reservation, len(admitted)
    assert LimitCounter.objects.get(kind="tokens", user_key="").count == len(admitted) * 500


@pytest.mark.both_dbs
def test_a_step_reserves_its_worst_case_in_one_statement_and_a_refused_one_keeps_nothing(
        project, django_assert_num_queries):
    from projects import limits
    from providers.base import ModelError

    def counts() -> dict[str, int]:
        return dict(LimitCounter.objects.filter(kind="tokens").values_list("user_key", "count"))

    budget(project, tokens_per_day=1000, tokens_per_day_per_user=600)
    with django_assert_num_queries(1):
        assert limits.step_admit(project=project, user_key="alice", usage=None, reserve=500) == 500
    # The run's finished steps used 20 tokens beyond its 500 reserved: they must fit with the step's 50.
    with django_assert_num_queries(1):
        assert limits.step_admit(project=project, user_key="alice", usage={"total_tokens": 520}, reserved=500,
                                 reserve=50) == 70
    assert counts() == {"alice": 570, "": 570}
    # Its steps used 30 fewer than the 570 reserved: given back in the statement that reserves the next 40.
    with django_assert_num_queries(1):
        assert limits.step_admit(project=project, user_key="alice", usage={"total_tokens": 540}, reserved=570,
                                 reserve=40) == 10
    assert counts() == {"alice": 580, "": 580}
    with django_assert_num_queries(1):
        assert limits.step_admit(project=project, user_key="bob", usage=None, reserve=500) == 500
    # The project's count is past its budget: refused, and carol's count keeps nothing of it.
    with pytest.raises(ModelError) as refused:
        limits.step_admit(project=project, user_key="carol", usage=None, reserve=10)
    assert refused.value.code == "BUDGET_EXCEEDED"
    # A run past its user's budget by itself is refused without a statement.
    with django_assert_num_queries(0), pytest.raises(ModelError):
        limits.step_admit(project=project, user_key="alice", usage={"total_tokens": 1200}, reserved=580, reserve=1)
    assert counts() == {"alice": 580, "bob": 500, "carol": 0, "": 1080}
    # The runs' ends reconcile their whole reservations with what they used.
    limits.call_record(project=project, user_key="alice", usage={"total_tokens": 560}, reserved=580)
    limits.call_record(project=project, user_key="bob", usage={"total_tokens": 300}, reserved=500)
    assert counts() == {"alice": 560, "bob": 300, "carol": 0, "": 860}
    budget(project, tokens_per_day_per_user=0)
    with django_assert_num_queries(0):
        assert limits.step_admit(project=project, user_key="alice", usage=None, reserve=500) == 0


@pytest.mark.both_dbs  # the step's reservation is its own statement on each database
def test_runs_stepping_together_overshoot_the_budget_by_one_step_reservation_at_most(servers, api_key, project,
                                                                                     fake: Vendor):
    """Ten runs on two processes each call a server tool, then the model again with its result. The
    budget holds the ten starts' reservations but not ten second calls. Fails on the code before each
    step reserved: every second call was let in (the day's count held the starts' reservations only),
    2,100 tokens used on a 1,400-token budget."""
    import threading
    import time
    from concurrent.futures import ThreadPoolExecutor

    from providers.estimate import prompt_tokens
    from telemetry.models import Usage
    from tools.models import ProjectTool

    runs, limit, cap = 10, 1400, 100
    ProjectTool.objects.create(project=project, name="calculate")
    # A start reserves about 115 (its message and the 100-token output cap): the ten fit. A second
    # call reserves its messages (under 100 tokens, checked below) and the cap: at most 200.
    project_settings_save(project, ProjectSettings(limits=Limits(tokens_per_day=limit), max_output_tokens=cap))
    step_reservation = 2 * cap
    first_used, second_used = 100, 110  # each under its call's reservation
    lock, started, second_calls = threading.Lock(), threading.Event(), []
    firsts, release = [0], threading.Event()

    def reply(body):
        # Every first call waits for the ten (all starts admitted before any second step); every
        # second call waits for the test, so no run ends and gives its reservation back meanwhile.
        if body["messages"][-1]["role"] == "tool":
            with lock:
                second_calls.append(body)
            release.wait(60)
            return Text("2", usage=usage(second_used))
        with lock:
            firsts[0] += 1
            if firsts[0] == runs:
                started.set()
        started.wait(60)
        return ToolCalls([ToolCall("calculate", '{"expression": "1 + 1"}')], usage=usage(first_used))

    fake.fake.responder = reply
    try:
        with ThreadPoolExecutor(runs) as pool:
            futures = [pool.submit(run, servers[n % 2], api_key, f"u{n}") for n in range(runs)]
            try:
                assert started.wait(60), f"{firsts[0]} of {runs} runs called the model"
                # Settled: each run either waits in its second call or ended, refused it.
                for _ in range(1200):
                    if len(second_calls) + sum(f.done() for f in futures) == runs:
                        break
                    time.sleep(0.05)
                admitted = len(second_calls)
                assert admitted + sum(f.done() for f in futures) == runs, "the runs did not settle"
                held = LimitCounter.objects.get(kind="tokens", user_key="").count
            finally:
                release.set()  # a failing test leaves no call of the fake waiting
                started.set()
            answers = [f.result() for f in futures]
    finally:
        fake.fake.responder = None

    assert all(prompt_tokens(body["messages"]) < cap for body in second_calls)
    assert [a.status_code for a in answers] == [200] * runs
    ends = sorted((r.events[-1]["type"], r.events[-1].get("code")) for r in answers)
    assert ends == sorted([("RUN_FINISHED", None)] * admitted + [("RUN_ERROR", "BUDGET_EXCEEDED")] * (runs - admitted))
    assert len(fake.requests) == runs + admitted
    # The second steps admitted: at most the budget plus one step's reservation, in worst cases
    # reserved and in tokens used (before: all ten).
    assert 1 <= admitted < runs
    assert held <= limit + step_reservation, held
    used = runs * first_used + admitted * second_used
    assert used <= limit + step_reservation, (admitted, used)
    print(f"{admitted} of {runs} second calls admitted; {held} tokens held at most on {limit}, {used} used")
    # Every run ended: its reservations (its start's and its step's) reconciled with what it used.
    assert LimitCounter.objects.get(kind="tokens", user_key="").count == used
    assert sum(u.input_tokens + u.output_tokens for u in Usage.objects.filter(project=project, kind="run")) == used
