"""The retention job (retention/policy.py): each project's `retention` deletes what is older, in
bounded batches, and nothing of a project without one (docs/operations.md#retention-and-deletion)."""
from __future__ import annotations

import time
from datetime import timedelta

import pytest
from django.utils import timezone

from projects.config import ProjectSettings, Retention, project_settings_save
from projects.models import Project
from projects.project_file import ProjectFileError, project_file_parse
from retention.policy import UPLOADS_STRIPPED, retention_apply
from runs.models import Run, RunEvent
from telemetry.models import Usage
from tests.retention.test_forget_user import run_as, wait_for_event_log
from tests.support.images import image_part, png
from threads.models import Message, Thread

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

TEXT = {"type": "text", "text": "hello"}


def keep(project, **days) -> None:
    project_settings_save(project, ProjectSettings(retention=Retention(**days)))


def age(thread_id: str, days: float) -> None:
    """Makes a thread and all it holds `days` older, as if it had been written then."""
    then = timezone.now() - timedelta(days=days)
    Thread.objects.filter(id=thread_id).update(updated_at=then, created_at=then)
    Message.objects.filter(thread_id=thread_id).update(created_at=then)
    runs = Run.objects.filter(thread_id=thread_id)
    RunEvent.objects.filter(run_id__in=runs.values("id")).update(created_at=then)
    Usage.objects.filter(thread_id=thread_id).update(created_at=then)
    runs.update(created_at=then, finished_at=then)


def test_old_threads_go_with_all_they_hold_and_recent_ones_stay(api, project, live_server_url):
    keep(project, transcripts_days=365)
    old = run_as(api, "alice", TEXT)
    recent = run_as(api, "alice", TEXT)
    wait_for_event_log(project, "alice")
    age(old, 400)
    age(recent, 300)
    old_runs = list(Run.objects.filter(thread_id=old).values_list("id", flat=True))

    report = retention_apply()

    removed = report[project.name]
    assert removed["threads.Thread"] == 1 and removed["runs.Run"] == len(old_runs)
    assert not Thread.objects.filter(id=old).exists()
    assert Message.objects.filter(thread_id=old).count() == 0
    assert RunEvent.objects.filter(run_id__in=old_runs).count() == 0
    assert api.get(f"/v1/threads/{recent}").status_code == 200
    assert retention_apply() == {}  # nothing more is old enough


def test_a_project_without_retention_keeps_everything(api, project, live_server_url):
    other = Project.objects.create(name="keeps-everything")
    thread = Thread.objects.create(project=other, user_key="alice")
    Message.objects.create(thread=thread, role="user", content=[image_part(png(2, 2))])
    Usage.objects.create(project=other, user_key="alice", outcome="completed")
    age(thread.id, 5000)
    Usage.objects.filter(project=other).update(created_at=timezone.now() - timedelta(days=5000))
    keep(project, transcripts_days=1, uploads_days=1, usage_days=1, event_log_minutes=1)

    assert retention_apply() == {}
    assert Message.objects.get(thread=thread).content[0]["resource"]["blob"]
    assert Usage.objects.filter(project=other).count() == 1


def test_uploads_are_taken_out_of_old_messages_which_stay_readable(api, project, live_server_url):
    keep(project, transcripts_days=365, uploads_days=30)
    old = run_as(api, "alice", TEXT, image_part(png(4, 4), name="receipt.png"))
    recent = run_as(api, "alice", TEXT, image_part(png(4, 4)))
    age(old, 40)

    report = retention_apply()

    assert report[project.name][UPLOADS_STRIPPED] == 1
    [question] = [m for m in api.get(f"/v1/threads/{old}").json()["messages"] if m["role"] == "user"]
    assert question["content"] == [TEXT, {"type": "text", "text": "[receipt.png (image/png): removed by the "
                                                                  "project's retention]"}]
    [recent_question] = [m for m in api.get(f"/v1/threads/{recent}").json()["messages"] if m["role"] == "user"]
    recent_parts = recent_question["content"]
    assert recent_parts[1]["resource"]["blob"]
    # The thread goes on: the model reads the line in place of the image.
    run_as(api, "alice", {"type": "text", "text": "and now?"}, thread_id=old)
    assert retention_apply() == {}


def test_usage_rows_and_the_event_log_go_after_their_own_periods(api, project, live_server_url):
    keep(project, usage_days=90, event_log_minutes=10)
    thread = run_as(api, "alice", TEXT)
    wait_for_event_log(project, "alice")
    fresh = run_as(api, "alice", TEXT)
    wait_for_event_log(project, "alice")
    events = RunEvent.objects.filter(run_id__in=Run.objects.filter(thread_id=thread).values("id")).count()
    fresh_events = RunEvent.objects.filter(run_id__in=Run.objects.filter(thread_id=fresh).values("id")).count()
    age(thread, 100)

    report = retention_apply()

    assert report[project.name] == {"telemetry.Usage": 1, "runs.RunEvent": events}
    assert Usage.objects.filter(project=project).count() == 1
    assert RunEvent.objects.filter(run_id__in=Run.objects.filter(thread_id=fresh).values("id")).count() == fresh_events
    assert Thread.objects.filter(id=thread).exists()  # the transcript is kept: no transcriptsDays


def test_a_pass_deletes_in_bounded_batches(project):
    keep(project, transcripts_days=1, usage_days=1)
    for _ in range(5):
        thread = Thread.objects.create(project=project, user_key="alice")
        Usage.objects.create(project=project, user_key="alice", outcome="completed")
        age(thread.id, 2)
    Usage.objects.update(created_at=timezone.now() - timedelta(days=2))

    counts = [retention_apply(batch=2, max_batches=1).get(project.name, {}) for _ in range(4)]

    assert [c.get("threads.Thread", 0) for c in counts] == [2, 2, 1, 0]
    assert [c.get("telemetry.Usage", 0) for c in counts] == [2, 2, 1, 0]


def test_the_project_file_takes_a_retention_and_refuses_uploads_kept_past_their_thread():
    parsed = project_file_parse("projects:\n- name: p\n  retention: {transcriptsDays: 365, uploadsDays: 30, "
                                "usageDays: 400, eventLogMinutes: 10}\n")
    assert parsed.projects[0].retention == Retention(transcripts_days=365, uploads_days=30, usage_days=400,
                                                     event_log_minutes=10)
    with pytest.raises(ProjectFileError, match="retention"):
        project_file_parse("projects:\n- name: p\n  retention: {transcriptsDays: 30, uploadsDays: 60}\n")
    with pytest.raises(ProjectFileError, match="retention.usageDay"):
        project_file_parse("projects:\n- name: p\n  retention: {usageDay: 30}\n")


def test_each_serving_process_runs_the_job_on_its_interval(project):
    from tests.support.live import LiveServer

    keep(project, transcripts_days=30)
    old = Thread.objects.create(project=project, user_key="alice")
    recent = Thread.objects.create(project=project, user_key="alice")
    age(old.id, 31)
    server = LiveServer("retention-job", {"RETENTION_INTERVAL_SECONDS": "0.2"})
    try:
        deadline = time.monotonic() + 30
        while Thread.objects.filter(id=old.id).exists() and time.monotonic() < deadline:
            time.sleep(0.1)
    finally:
        server.stop()
    assert not Thread.objects.filter(id=old.id).exists()
    assert Thread.objects.filter(id=recent.id).exists()
