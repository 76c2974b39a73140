"""Project and ApiKey moved to the projects app (projects/migrations/0001), their rows with them.

In state only: the thread's foreign key now names projects.Project, and threads forgets the two
models. Nothing changes in the database, whose tables projects/migrations/0001 took over. Every
migration that still refers to threads.Project (tools/migrations/0002) must have been re-pointed
before the model leaves threads' state.
"""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0001_initial"),
        ("threads", "0003_agui_external_ids_and_state"),
        ("tools", "0002_project_moved_to_projects"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="thread",
                    name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="threads",
                                            to="projects.project"),
                ),
                migrations.DeleteModel(name="ApiKey"),
                migrations.DeleteModel(name="Project"),
            ],
            database_operations=[],
        ),
    ]
