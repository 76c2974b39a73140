"""The admin as an operator reads it: messages and runs in time order, messages found by their
words, a run's duration, model, token usage and error. Usage comes from a real run."""
import datetime

import pytest
from django.urls import reverse
from django.utils import timezone

from projects.models import Project
from runs.models import Run
from tests.support.admin import admin_url
from tests.support.run_requests import run
from threads import services
from threads.models import Message, Thread

pytestmark = pytest.mark.django_db


# `admin_client` is pytest-django's: a logged-in superuser.


@pytest.fixture
def thread(db):
    project = Project.objects.create(name="admin-order")
    return services.thread_create(project=project, user_key="alice", name="Ordered")


def _text(text: str) -> list[dict]:
    return [{"type": "text", "text": text}]


def _in_order(html: str, *needles: str) -> bool:
    positions = [html.index(needle) for needle in needles]
    return positions == sorted(positions)


def test_messages_are_listed_newest_first_by_time_not_by_id(admin_client, thread):
    base = timezone.now()
    # Ids in an order that neither matches time nor its reverse.
    for offset, message_id in enumerate(["msg_cherry", "msg_apple", "msg_banana"]):
        services.message_create(thread=thread, role="user", content=_text(message_id), message_id=message_id)
        Message.objects.filter(id=message_id).update(created_at=base + datetime.timedelta(seconds=offset))

    html = admin_client.get(reverse("admin:threads_message_changelist")).content.decode()

    assert _in_order(html, "msg_banana", "msg_apple", "msg_cherry")


def test_a_threads_runs_are_shown_in_the_order_they_ran(admin_client, thread):
    base = timezone.now()
    for offset, run_id in enumerate(["run_zulu", "run_alpha", "run_mike"]):
        Run.objects.create(id=run_id, thread=thread, created_at=base + datetime.timedelta(seconds=offset))

    html = admin_client.get(admin_url(Thread, "change", thread.pk)).content.decode()

    assert _in_order(html, "run_zulu", "run_alpha", "run_mike")
    runs_list = admin_client.get(reverse("admin:runs_run_changelist")).content.decode()
    assert _in_order(runs_list, "run_mike", "run_alpha", "run_zulu")


def test_message_search_finds_the_words_of_a_message(admin_client, thread):
    services.message_create(thread=thread, role="user", content=_text("Order a pineapple pizza"), message_id="msg_pizza")
    services.message_create(thread=thread, role="user", content=_text("Something else"), message_id="msg_other")

    html = admin_client.get(reverse("admin:threads_message_changelist"), {"q": "pineapple"}).content.decode()

    assert "msg_pizza" in html and "msg_other" not in html


def test_a_run_shows_its_duration_model_tokens_and_error(admin_client, thread):
    start = timezone.now()
    Run.objects.create(id="run_failed", thread=thread, status=Run.Status.FAILED, model="gpt-test",
                       started_at=start, finished_at=start + datetime.timedelta(seconds=2.5),
                       usage={"prompt_tokens": 12, "completion_tokens": 30, "total_tokens": 42},
                       error_code="LLM_SERVER_ERROR", error_message="The model provider failed.")
    Run.objects.create(id="run_plain", thread=thread)

    html = admin_client.get(admin_url(Run, "change", "run_failed")).content.decode()
    listing = admin_client.get(reverse("admin:runs_run_changelist")).content.decode()

    for text in ("2.5 s", "gpt-test", "12 prompt, 30 completion, 42 total", "LLM_SERVER_ERROR",
                 "The model provider failed."):
        assert text in html
    assert "42 total" in listing and "not reported" in listing and "(default)" in listing


def test_a_run_stores_the_token_usage_its_provider_reported(api):
    thread_id, _ = run(api, "hello there")

    usage = Run.objects.get(thread_id=thread_id).usage

    # The offline model reports estimated prompt and completion tokens (providers/estimate.py).
    assert usage["completion_tokens"] > 0 and usage["prompt_tokens"] > 0
    assert usage["total_tokens"] == usage["prompt_tokens"] + usage["completion_tokens"]
