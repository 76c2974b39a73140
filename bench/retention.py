"""`bin/bench retention`: what a retention pass costs on PostgreSQL as the usage table and the run event
log grow (docs/benchmarks.md#retention, docs/operations.md#retention-and-deletion).

For each size, on a fresh throwaway cluster: a project whose `retention` keeps usage 30 days and the
event log 60 minutes, half of its usage rows and half of its runs' events old enough to go. Then the
retention's own functions (`usage_prune`, `event_log_prune`) delete the old half in their batches of 200
while another connection writes a new usage row every 5 ms, as serving processes do. Printed: the time
per batch (p50, p99) and per deleted row, and the writes' latency while the deletes run: whether deleting
by index in batches stays flat as the tables grow (the reason the tables are not partitioned) and never
holds up the writers.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
import threading
import time

from tests.support.pg_cluster import PgCluster

PROJECT_FILE = """projects:
  - name: capacity
    retention: {usageDays: 30, eventLogMinutes: 60}
"""
EVENTS_PER_RUN = 100


def _pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))] if ordered else 0.0


def _fill(rows: int) -> None:
    """`rows` usage rows and `rows` event-log rows (in runs of EVENTS_PER_RUN events), half of each old."""
    from django.db import connection

    from projects.models import Project
    from runs.models import Run, RunEvent
    from telemetry.models import Usage
    from threads.models import Thread

    project = Project.objects.get(name="capacity")
    runs = rows // EVENTS_PER_RUN
    with connection.cursor() as cursor:
        cursor.execute(f"""
            INSERT INTO {Usage._meta.db_table} (project_id, user_key, kind, model, provider, input_tokens,
                output_tokens, reasoning_tokens, outcome, created_at)
            SELECT %s, 'user' || (g %% 1000), 'run', 'm', 'p', 10, 10, 0, %s,
                   now() - (g %% 2) * interval '60 days' FROM generate_series(1, %s) AS g""",
                       [project.pk, Usage.Outcome.values[0], rows])
        thread_ids = [t.id for t in Thread.objects.bulk_create(
            [Thread(project=project, user_key=f"user{i}") for i in range(max(1, runs // 100))])]
        made = Run.objects.bulk_create([Run(thread_id=thread_ids[i % len(thread_ids)], status="completed")
                                        for i in range(runs)], batch_size=2000)
        run_ids = [run.id for run in made]
        Run.objects.filter(id__in=run_ids[::2]).update(finished_at=time_ago(days=2))
        Run.objects.filter(id__in=run_ids[1::2]).update(finished_at=time_ago(days=0))
        cursor.execute(f"""
            INSERT INTO {RunEvent._meta.db_table} (run_id, seq, data, final, created_at)
            SELECT r.id, s, '{{"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_x","delta":"word "}}', false, now()
            FROM unnest(%s::text[]) AS r(id), generate_series(1, %s) AS s""", [run_ids, EVENTS_PER_RUN])
        cursor.execute("ANALYZE")


def time_ago(*, days: float):
    from datetime import timedelta

    from django.utils import timezone

    return timezone.now() - timedelta(days=days)


class _Writer(threading.Thread):
    """A serving process's usage writes, one every 5 ms on its own connection, timed."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.latencies: list[float] = []
        self.stop = threading.Event()

    def run(self) -> None:
        from django.db import connection

        from projects.models import Project
        from telemetry.models import Usage

        project = Project.objects.get(name="capacity")
        try:
            while not self.stop.is_set():
                began = time.perf_counter()
                Usage.objects.create(project=project, user_key="live", outcome=Usage.Outcome.values[0])
                self.latencies.append(time.perf_counter() - began)
                self.stop.wait(0.005)
        finally:
            connection.close()


def _timed_batches(prune, project, cutoff) -> tuple[list[float], int]:
    """Runs `prune` one batch at a time until nothing is left: (seconds per batch, rows deleted)."""
    times, deleted = [], 0
    while True:
        began = time.perf_counter()
        n = prune(project, cutoff, batch=200, max_batches=1)
        times.append(time.perf_counter() - began)
        deleted += n
        if n == 0:
            return times[:-1] or times, deleted


def _measure(rows: int) -> list[str]:
    cluster = PgCluster(database="tambo")
    try:
        cluster.migrate_and_key(PROJECT_FILE)
        os.environ["DATABASE_URL"] = cluster.url
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tambo_project.settings")
        import django

        django.setup()
        from django.db import connections

        from projects.models import Project
        from retention.policy import event_log_prune, usage_prune

        began = time.perf_counter()
        _fill(rows)
        filled = time.perf_counter() - began
        project = Project.objects.get(name="capacity")
        lines = []
        for name, prune, cutoff in (("usage rows", usage_prune, time_ago(days=30)),
                                    ("event-log rows", event_log_prune, time_ago(days=1))):
            writer = _Writer()
            writer.start()
            began = time.perf_counter()
            batches, deleted = _timed_batches(prune, project, cutoff)
            took = time.perf_counter() - began
            writer.stop.set()
            writer.join()
            w = writer.latencies
            lines.append(f"| {rows:,} | {name} | {deleted:,} in {len(batches)} batches, {took:.1f} s | "
                         f"{statistics.median(batches) * 1000:.1f} / {_pct(batches, 0.99) * 1000:.1f} ms | "
                         f"{took / max(deleted, 1) * 1e6:.1f} µs | {statistics.median(w) * 1000:.2f} / "
                         f"{_pct(w, 0.99) * 1000:.2f} / {max(w) * 1000:.1f} ms ({len(w)}) |")
        print(f"  {rows:,} rows of each filled in {filled:.0f} s", file=sys.stderr, flush=True)
        connections.close_all()
        return lines
    finally:
        cluster.stop()


def retention(sizes: list[int]) -> None:
    """Each size in a process of its own (Django binds its database at start)."""
    lines = []
    for rows in sizes:
        out = subprocess.run([sys.executable, "-m", "bench.retention", str(rows)], check=True, text=True,
                             stdout=subprocess.PIPE)
        lines += out.stdout.splitlines()
    print("| rows in the table | deleting | deleted | per batch p50 / p99 | per row | a write meanwhile "
          "p50 / p99 / max (writes) |")
    print("|---|---|---|---|---|---|")
    print("\n".join(lines))


if __name__ == "__main__":
    print("\n".join(_measure(int(sys.argv[1]))))
