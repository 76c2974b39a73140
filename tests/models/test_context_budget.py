"""The context budget: a long thread's history is trimmed oldest turns first to the project's
maxInputTokens, a tool call is never separated from its result, the history is read newest first
and bounded, and a message that alone does not fit is 400 CONTEXT_TOO_LARGE before any call."""
from __future__ import annotations

import pytest

from projects.models import Project
from runs.context_budget import fit, history_for
from tests.models.conftest import apply_file, openai_model, project_runs
from tests.support.fake_openai import Text
from threads import services as thread_services
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db(transaction=True)

FILLER = "word " * 40  # about 50 tokens by the estimate


def long_thread(project: Project, user_key: str, turns: int = 75) -> Thread:
    """A thread of `turns` × 4 messages: user text, a tool call, its result, the answer."""
    thread = thread_services.thread_create(project=project, user_key=user_key, metadata=None, initial_messages=())
    for n in range(turns):
        thread_services.message_create(thread=thread, role=Message.Role.USER,
                                       content=[{"type": "text", "text": f"question {n} {FILLER}"}])
        call = thread_services.message_create(thread=thread, role=Message.Role.ASSISTANT, content=[
            {"type": "tool_use", "id": f"call_{n}", "name": "lookup", "input": {"n": n}}])
        thread_services.message_create(thread=thread, role=Message.Role.TOOL, tool_call_id=f"call_{n}",
                                       parent_message_id=call.id, content=[
            {"type": "tool_result", "toolUseId": f"call_{n}", "content": [{"type": "text", "text": FILLER}]}])
        thread_services.message_create(thread=thread, role=Message.Role.ASSISTANT,
                                       content=[{"type": "text", "text": f"answer {n} {FILLER}"}])
    return thread


ENTRANCES = ["v1", "agui"]


def _run_on(runs, entrance: str, thread_id: str, text: str) -> None:
    """One run on the thread through `entrance`: /v1's run route, or AG-UI naming the server thread."""
    if entrance == "v1":
        runs.run(thread_id, text)
        return
    response = runs.api.post("/v1/agui", {
        "threadId": thread_id, "runId": "r-budget", "tools": [], "context": [], "state": {},
        "messages": [{"id": "m-budget", "role": "user", "content": text}],
        "forwardedProps": {"userKey": runs.api.user_key}})
    assert response.status_code == 200, response.text
    assert "RUN_FINISHED" in response.text, response.text


def _new_run(runs, entrance: str, text: str):
    if entrance == "v1":
        return runs.post_new(text)
    return runs.api.post("/v1/agui", {
        "threadId": "client-budget", "runId": "r1", "tools": [], "context": [], "state": {},
        "messages": [{"id": "m1", "role": "user", "content": text}], "forwardedProps": {"userKey": runs.api.user_key}})


@pytest.mark.parametrize("entrance", ENTRANCES)
def test_a_300_message_thread_is_trimmed_to_the_budget_oldest_turns_first(tmp_path, models_url, oai, entrance):
    apply_file(tmp_path, f"""
projects:
  - name: budgeted
    systemPrompt: "Be brief."
    models: [{openai_model(oai.fake, model=f"gpt-budget-{entrance}")}]
    maxInputTokens: 3000
    maxOutputTokens: 500
""")
    # A model of its own per entrance: the estimate is calibrated per model by the fake's reported
    # prompt tokens (runs/context_budget.py), and each case must start from the uncalibrated one.
    runs = project_runs(models_url, "budgeted")
    thread = long_thread(Project.objects.get(name="budgeted"), runs.api.user_key)
    assert thread.messages.count() == 300
    oai.script(Text("ok"))
    _run_on(runs, entrance, thread.id, "the latest question")
    sent = oai.requests[0].body["messages"]
    assert sent[0] == {"role": "system", "content": "Be brief."}
    assert sent[-1] == {"role": "user", "content": "the latest question"}
    # Trimmed: well under the 300 stored, the newest turns kept whole, in order.
    questions = [m["content"].split()[1] for m in sent if m["role"] == "user" and m["content"].startswith("question")]
    assert 5 < len(questions) < 40 and questions == [str(n) for n in range(75 - len(questions), 75)]
    assert sum(len(str(m.get("content") or "")) + len(str(m.get("tool_calls") or "")) for m in sent) / 4 < 2500
    # Every tool result's call is there, and every call's result.
    calls = {c["id"] for m in sent for c in m.get("tool_calls") or ()}
    results = {m["tool_call_id"] for m in sent if m["role"] == "tool"}
    assert calls == results and calls
    # Nothing stored changed: the 300 messages and the new turn.
    assert thread.messages.count() == 302


def test_the_history_is_read_newest_first_and_bounded(transactional_db, project):
    thread = long_thread(project, "alice")
    read = history_for(thread, 2500)
    assert 0 < len(read) < 300 and read[0].role == Message.Role.USER
    assert read[-1].id == thread.messages.order_by("-created_at", "-id").first().id
    assert len(history_for(thread, None)) == 300


def test_a_tool_call_is_never_split_from_its_result():
    messages = [{"role": "system", "content": "s"},
                {"role": "user", "content": "a" * 400},
                {"role": "assistant", "content": None, "tool_calls": [
                    {"id": "c1", "type": "function", "function": {"name": "t", "arguments": "{}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "r" * 400},
                {"role": "user", "content": "now"}]
    assert fit(messages, 10_000) == messages
    assert fit(messages, 60) == [messages[0], messages[-1]]


@pytest.mark.parametrize("entrance", ENTRANCES)
def test_a_message_that_alone_does_not_fit_is_refused_before_any_call(tmp_path, models_url, oai, entrance):
    apply_file(tmp_path, f"""
projects:
  - name: tiny-budget
    models: [{openai_model(oai.fake)}]
    maxInputTokens: 200
    maxOutputTokens: 100
""")
    runs = project_runs(models_url, "tiny-budget")
    response = _new_run(runs, entrance, "x " * 1000)
    assert response.status_code == 400 and response.json()["code"] == "CONTEXT_TOO_LARGE"
    assert oai.requests == [] and not Thread.objects.filter(project__name="tiny-budget").exists()
