"""Each project gets its own random access-token secret (access tokens were signed with a key derived
from SECRET_KEY, whose development default is public). Every existing project gets a secret of its own;
access tokens issued before stop verifying, and their apps exchange new ones (they live an hour)."""
from django.db import migrations, models

import projects.models


def forwards(apps, schema_editor):
    Project = apps.get_model("projects", "Project")
    for pk in Project.objects.values_list("pk", flat=True):
        Project.objects.filter(pk=pk).update(access_token_secret=projects.models.new_access_token_secret())


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0004_project_settings"),
    ]

    operations = [
        migrations.AddField(model_name="project", name="access_token_secret",
                            field=models.CharField(default=projects.models.new_access_token_secret, editable=False,
                                                   max_length=128)),
        migrations.RunPython(forwards, migrations.RunPython.noop),
    ]
