"""Content encrypted at rest, per project (docs/projects.md#content-encrypted-at-rest).

A project with `encryptContent: true` stores its threads' content encrypted with the SECRETS_KEYS
keyring (projects/secrets.py, MultiFernet: the first key encrypts, every key decrypts). The one place
it happens is the column: `SealedJSONField` encrypts a value as it is written, when the row's
`seals_content()` says so (a message asks its thread, whose `sealed` flag follows the project's
setting), and decrypts what it reads, so every reader (the API, the model's history, the admin,
memory extraction, retention) gets plaintext without knowing.

The stored form is a JSON string `"fernet:<token>"` (the token holds the value's JSON). Content is a
list and state an object, never such a string, so plaintext rows written before the setting was
turned on stay readable beside encrypted ones. Empty values (`[]`, `{}`, null) stay as they are:
they say nothing, and queries that skip them (`exclude(component_state={})`) keep working.

What cannot work on encrypted rows is SQL over their content: a search, `content__icontains`. The
admin's search by words decrypts a bounded number of the most recent encrypted messages in the
request instead (threads/search.py).
"""
from __future__ import annotations

import json
from typing import Any

from django.db import models
from django.db.models.fields.json import KeyTransform

from projects.secrets import STORED_PREFIX, seal, unseal


class Sealed:
    """A value already in its stored form (an envelope), written as is: what rotation and batch
    writes that skip `pre_save` (`bulk_update`) hand the field."""

    __slots__ = ("envelope",)

    def __init__(self, envelope: str):
        self.envelope = envelope


def is_sealed(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(STORED_PREFIX)


def seal_json(value: Any) -> Sealed:
    return Sealed(seal(json.dumps(value, separators=(",", ":"), ensure_ascii=False)))


def open_json(value: Any) -> Any:
    """A stored value as its plaintext: an envelope decrypted, anything else as it is."""
    return json.loads(unseal(value)) if is_sealed(value) else value


class SealedJSONField(models.JSONField):
    """A JSONField whose value is encrypted when its row's `seals_content()` is true (module docstring)."""

    def from_db_value(self, value, expression, connection):
        value = super().from_db_value(value, expression, connection)
        if isinstance(expression, KeyTransform):
            return value
        return open_json(value)

    def pre_save(self, model_instance, add):
        value = super().pre_save(model_instance, add)
        if value in (None, [], {}) or isinstance(value, Sealed) or not model_instance.seals_content():
            return value
        return seal_json(value)

    def get_prep_value(self, value):
        if isinstance(value, Sealed):
            return value.envelope
        return super().get_prep_value(value)


def seal_text(text: str, sealed: bool) -> str:
    """A text column's stored form (the checkpointed text of a run, runs/recovery/leases.py)."""
    return seal(text) if sealed and text else text


def open_text(value: str | None) -> str | None:
    return unseal(value) if is_sealed(value) else value


def threads_sealed_sync(project, config) -> None:
    """Registered with projects/config.py: after a project's settings are written, its threads
    store their content encrypted, or not, from the next write on (one UPDATE; the rows written
    before stay as they are until `manage.py rotate_secrets` seals them)."""
    from threads.models import Thread

    Thread.objects.filter(project_id=project.pk).exclude(sealed=config.encrypt_content) \
        .update(sealed=config.encrypt_content)


def content_rotate(batch: int) -> dict[str, int]:
    """`manage.py rotate_secrets`' step for content (registered by threads/apps.py): first the threads
    of every project follow its `encryptContent`; then, `batch` rows per transaction, each encrypted
    value is re-encrypted with the first key and each plaintext value of an encrypting thread is
    encrypted (what was written before the setting was turned on). Returns the rows rewritten per table.

    Reads the stored text (a cast), never the decrypted value: a value is rotated as a Fernet token
    (MultiFernet.rotate), and a plaintext one parsed only to be sealed."""
    from projects.config import project_settings
    from projects.models import Project
    from threads.models import Message, Thread

    for project in Project.objects.all():
        threads_sealed_sync(project, project_settings(project))
    return {Thread._meta.label: _rows_rotate(Thread, "sealed", batch),
            Message._meta.label: _rows_rotate(Message, "thread__sealed", batch)}


def _rows_rotate(model, sealed_by: str, batch: int) -> int:
    from django.db import transaction
    from django.db.models import TextField
    from django.db.models.functions import Cast

    from projects.secrets import secret_rotate

    fields = [f for f in model._meta.concrete_fields if isinstance(f, SealedJSONField)]
    casts = [Cast(f.name, output_field=TextField()) for f in fields]
    changed_rows, after = 0, ""
    while True:
        with transaction.atomic():
            rows = list(model.objects.filter(pk__gt=after).order_by("pk").select_for_update(of=("self",))
                        .values_list("pk", sealed_by, *casts)[:batch])
            for pk, sealed, *raws in rows:
                changes = {}
                for field, raw in zip(fields, raws):
                    if raw is None or raw in ("null", "[]", "{}"):
                        continue
                    value = json.loads(raw)
                    if is_sealed(value):
                        changes[field.name] = Sealed(secret_rotate(value))
                    elif sealed:
                        changes[field.name] = seal_json(value)
                if changes:
                    model.objects.filter(pk=pk).update(**changes)
                    changed_rows += 1
        if len(rows) < batch:
            return changed_rows
        after = rows[-1][0]
