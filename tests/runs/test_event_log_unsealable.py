"""A run whose event log rows cannot be encrypted (its thread is encrypted, SECRETS_KEYS is unset)
holds up no other run's events (runs/stream/feeds.py `Flusher.flush`).

Before, sealing raised for the whole batch on every flush: the flusher retried forever and no run
of the process reached the event log again (seen in CI, where an in-process test's encrypting run
outlived its key and a later test's run never logged its end).
"""
from __future__ import annotations

import asyncio

import pytest
from django.test import override_settings

from projects.models import Project
from runs.models import Run, RunEvent
from runs.stream.event_log import event_log_connection
from runs.stream.feeds import Flusher
from threads import services

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]


def _two_runs_flushed_twice() -> Flusher:
    async def go() -> Flusher:
        flusher = Flusher()
        try:
            for run_id, encrypt in (("run_sealed_no_key", True), ("run_plain", False)):
                feed = flusher.feed_for(run_id, encrypt=encrypt)
                feed.append(b'data: {"type":"RUN_STARTED"}\n\n', None)
                feed.end()
            await flusher.flush()  # raised ImproperlyConfigured before, and wrote nothing
            await flusher.flush()  # nothing left: the unsealable run is not retried
            return flusher
        finally:
            await flusher.stop()
            await event_log_connection.close()

    return asyncio.run(go())


@override_settings(SECRETS_KEYS=[])
def test_a_run_that_cannot_be_encrypted_is_left_out_and_the_others_are_logged(caplog):
    thread = services.thread_create(project=Project.objects.create(name="unsealable"), user_key="u")
    for run_id in ("run_sealed_no_key", "run_plain"):  # PostgreSQL logs only the events of stored runs
        Run.objects.create(id=run_id, thread=thread, status=Run.Status.STREAMING)
    flusher = _two_runs_flushed_twice()
    # Its own two runs only: a live server of an earlier test may log a late row of its own runs here.
    ours = RunEvent.objects.filter(run_id__in=["run_sealed_no_key", "run_plain"])
    assert list(ours.values_list("run_id", "seq", "data")) == [
        ("run_plain", 1, '{"type":"RUN_STARTED"}')]
    assert flusher.feeds == {}  # both forgotten: nothing is retried
    errors = [r.getMessage() for r in caplog.records if r.levelname == "ERROR"]
    assert len(errors) == 1 and "run_sealed_no_key" in errors[0], errors
