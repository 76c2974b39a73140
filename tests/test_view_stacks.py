"""Why the JSON API has two view stacks (docs/architecture.md, "Two view stacks, on purpose"): DRF's
views are synchronous, so under ASGI each runs on a thread for its whole length, which a streaming
view must not; the run, events, AG-UI and gateway views are coroutines. When DRF's views turn async
the first test fails, and folding the stacks becomes possible."""
from __future__ import annotations

from asgiref.sync import iscoroutinefunction
from django.urls import resolve


def test_drfs_views_are_synchronous():
    assert not iscoroutinefunction(resolve("/v1/threads").func)


def test_the_views_that_stream_or_wait_on_a_model_are_coroutines():
    for path in ("/v1/threads/runs", "/v1/threads/thr_x/runs/run_x/events", "/api/chat/completions"):
        assert iscoroutinefunction(resolve(path).func), path
