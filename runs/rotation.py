"""`manage.py rotate_secrets`' step for what runs store of an encrypting thread (threads/sealing.py):
the event log's rows and the checkpointed text of runs in progress, re-encrypted with the first
SECRETS_KEYS key `batch` rows per transaction. Plaintext rows stay so: both go within minutes."""
from __future__ import annotations

from django.db import transaction
from django.db.models import Q

from projects.secrets import STORED_PREFIX, secret_rotate
from runs.models import Run, RunEvent


def runs_rotate(batch: int) -> dict[str, int]:
    counts = {Run._meta.label: 0, RunEvent._meta.label: 0}
    after = ""
    while True:
        with transaction.atomic():
            rows = list(Run.objects.select_for_update().filter(pk__gt=after, partial_text__startswith=STORED_PREFIX)
                        .order_by("pk").values_list("pk", "partial_text")[:batch])
            for pk, text in rows:
                Run.objects.filter(pk=pk).update(partial_text=secret_rotate(text))
        counts[Run._meta.label] += len(rows)
        if len(rows) < batch:
            break
        after = rows[-1][0]
    run_id, seq = "", 0
    while True:
        with transaction.atomic():
            rows = list(RunEvent.objects.select_for_update()
                        .filter(Q(run_id__gt=run_id) | Q(run_id=run_id, seq__gt=seq), data__startswith=STORED_PREFIX)
                        .order_by("run_id", "seq").values_list("run_id", "seq", "data")[:batch])
            for rid, number, data in rows:
                RunEvent.objects.filter(run_id=rid, seq=number).update(data=secret_rotate(data))
        counts[RunEvent._meta.label] += len(rows)
        if len(rows) < batch:
            return counts
        run_id, seq = rows[-1][0], rows[-1][1]
