"""Counting one end user's rows in every table that holds any, with the table list made from the models
themselves: a model with a user-key field holds the user's rows by (project, user key), and a model
whose foreign key leads to one holds them through it (a thread's messages, a message's suggestions). A
table added later is counted without a change here, so forgetting a user must reach it too.

The run event log names its run by id without a foreign key (runs/models.py): it is the one table
listed by hand, and `test_every_table_is_found` fails if another such table appears unlisted."""
from __future__ import annotations

import re

from django.apps import apps
from django.db import models

USER_FIELD = re.compile(r"^(user_key|user_id|end_user|subject)$")
# Tables that name an owner row by id, without a foreign key: model label -> (field, owner label).
BY_ID = {"runs.RunEvent": ("run_id", "runs.Run")}


def _own_models():
    return [m for m in apps.get_models() if m._meta.app_label not in
            {"admin", "auth", "contenttypes", "sessions", "messages", "staticfiles"}]


def user_paths() -> dict[str, str]:
    """model label -> the lookup path from it to the user-key field ('' for the owners themselves)."""
    paths: dict[str, str] = {}
    for model in _own_models():
        for field in model._meta.concrete_fields:
            if USER_FIELD.match(field.name) and not field.is_relation:
                paths[model._meta.label] = field.name
    grew = True
    while grew:
        grew = False
        for model in _own_models():
            if model._meta.label in paths:
                continue
            for field in model._meta.concrete_fields:
                if isinstance(field, models.ForeignKey) and field.related_model._meta.label in paths \
                        and field.related_model is not model:
                    paths[model._meta.label] = f"{field.name}__{paths[field.related_model._meta.label]}"
                    grew = True
                    break
    return paths


def _project_path(model, user_path: str) -> str:
    """The lookup from `model` to its project: beside the user key, or through the foreign key that
    leads to one that has it (an MCP authorisation's server)."""
    if "__" in user_path:
        return user_path.rsplit("__", 1)[0] + "__project"
    names = {field.name for field in model._meta.concrete_fields}
    if "project" in names:
        return "project"
    via = next(field.name for field in model._meta.concrete_fields if isinstance(field, models.ForeignKey)
               and "project" in {f.name for f in field.related_model._meta.concrete_fields})
    return f"{via}__project"


def user_row_counts(project, user_key: str) -> dict[str, int]:
    """The user's rows in every table that holds any, by model label."""
    paths = user_paths()
    counts = {}
    for label, path in paths.items():
        model = apps.get_model(label)
        counts[label] = model.objects.filter(**{path: user_key, _project_path(model, path): project}).count()
    for label, (field, owner) in BY_ID.items():
        owner_path = paths[owner]
        owner_model = apps.get_model(owner)
        owners = owner_model.objects.filter(**{owner_path: user_key, _project_path(owner_model, owner_path): project})
        counts[label] = apps.get_model(label).objects.filter(**{f"{field}__in": owners.values("pk")}).count()
    return counts
