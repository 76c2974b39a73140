"""The content types of Project and ApiKey follow them from `threads` to `projects`.

Permissions (`threads.add_project`, …) and admin log entries hang off the content type row. Renaming
the row's app label keeps them, and the users and groups they were granted to; leaving it would let
Django create fresh `projects` rows and permissions after migrating, and the old grants would point
at stale types. On a new database no row exists yet (they are made after migrating), and this does
nothing.
"""
from django.db import migrations

MOVED = ("project", "apikey")


def _relabel(apps, old: str, new: str) -> None:
    content_type = apps.get_model("contenttypes", "ContentType")
    for model in MOVED:
        # A row already made under the new label (a database migrated by hand in between) wins.
        if not content_type.objects.filter(app_label=new, model=model).exists():
            content_type.objects.filter(app_label=old, model=model).update(app_label=new)


def forwards(apps, schema_editor):
    _relabel(apps, "threads", "projects")


def backwards(apps, schema_editor):
    _relabel(apps, "projects", "threads")


class Migration(migrations.Migration):

    dependencies = [
        ("contenttypes", "0002_remove_content_type_name"),
        ("projects", "0002_tables_renamed"),
    ]

    operations = [migrations.RunPython(forwards, backwards)]
