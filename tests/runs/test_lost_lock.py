"""A run whose lock was taken over (it stopped renewing its lease) ends with RUN_ERROR, not success."""
import asyncio

import pytest
from asgiref.sync import sync_to_async
from django.db import connections

from clientsdk import wire
from projects.auth import Principal
from providers.offline import OfflineProvider
from runs import services
from runs.control import RunControl
from runs.loop import advance
from threads.models import Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


def _run_after_takeover(project, text: str, tools=None) -> list:
    body = wire.CreateThreadWithRunBody.model_validate(
        {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": text}]},
         "tools": tools or []})
    started = services.run_start(principal=Principal(project=project), body=body, thread_id=None)
    # Another process took the expired lease over before this run could end.
    Thread.objects.filter(pk=started.thread.pk).update(current_run_id="run_other")

    async def collect():
        events = [e async for e in advance(started, RunControl(started.run.id), OfflineProvider(delay=0))]
        # The loop's database work ran on asgiref's worker thread: close its connection there.
        await sync_to_async(connections.close_all)()
        return events

    return asyncio.run(collect())


def test_a_run_that_lost_its_lock_does_not_report_success(project):
    events = _run_after_takeover(project, "hello")
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "RUN_LEASE_EXPIRED"
    assert not any(e.type == "RUN_FINISHED" for e in events)


def test_a_run_that_lost_its_lock_does_not_ask_for_tool_results(project):
    tool = {"name": "lookup", "description": "Looks up", "inputSchema": {"type": "object"}}
    events = _run_after_takeover(project, "please lookup", tools=[tool])
    assert events[-1].type == "RUN_ERROR" and events[-1].code == "RUN_LEASE_EXPIRED"
    assert not any(getattr(e, "name", None) == "tambo.run.awaiting_input" for e in events)
    assert Thread.objects.get(pk=events[0].thread_id).pending_tool_call_ids == []
