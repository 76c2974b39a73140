"""Project moved to the projects app (projects/migrations/0001): the foreign keys follow it in state.

The database already has them right: they point at the same table, which that migration renamed.
"""
import django.db.models.deletion
from django.db import migrations, models


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0001_initial"),
        ("tools", "0001_initial"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.AlterField(
                    model_name="mcpserver",
                    name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="mcp_servers",
                                            to="projects.project"),
                ),
                migrations.AlterField(
                    model_name="projecttool",
                    name="project",
                    field=models.ForeignKey(on_delete=django.db.models.deletion.CASCADE, related_name="tools",
                                            to="projects.project"),
                ),
            ],
            database_operations=[],
        ),
    ]
