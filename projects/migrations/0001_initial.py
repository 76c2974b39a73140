"""Projects and API keys move here from the threads app, rows and all.

Until now `Project` and `ApiKey` were models of `threads` (tables `threads_project`,
`threads_project_members`, `threads_apikey`). The move follows Django's recipe for moving a model
between apps: `SeparateDatabaseAndState` creates the models in this app's *state* only, on the tables
that already exist, and threads/migrations/0004 and tools/migrations/0002 re-point their foreign keys
in state and remove the old models from threads' state, again without touching the database.

The tables keep their names here; projects/migrations/0002 renames them once nothing in any app's
state refers to the old models any more.
"""
import django.db.models.deletion
from django.conf import settings
from django.db import migrations, models

import core.clock
import projects.models


class Migration(migrations.Migration):

    initial = True

    dependencies = [
        migrations.swappable_dependency(settings.AUTH_USER_MODEL),
        # The last migration of threads that changed these two models: their tables are complete.
        ("threads", "0003_agui_external_ids_and_state"),
    ]

    operations = [
        migrations.SeparateDatabaseAndState(
            state_operations=[
                migrations.CreateModel(
                    name="Project",
                    fields=[
                        ("id", models.CharField(default=projects.models._project_id, editable=False, max_length=40,
                                                primary_key=True, serialize=False)),
                        ("name", models.CharField(max_length=200, unique=True)),
                        ("system_prompt", models.TextField(blank=True, default="")),
                        ("max_tool_calls_per_turn", models.PositiveIntegerField(
                            default=100, help_text="Total tool calls the model may make in one user turn.")),
                        ("created_at", models.DateTimeField(default=core.clock.now_unique)),
                        ("user_token_hs256_secret", models.CharField(
                            blank=True, default="", help_text="Shared secret for HS256-signed user tokens.",
                            max_length=512)),
                        ("user_token_public_key", models.TextField(
                            blank=True, default="", help_text="PEM public key for RS256/ES256/EdDSA-signed user tokens.")),
                        ("user_token_jwks_url", models.URLField(
                            blank=True, default="", help_text="JWKS URL of the identity provider.", max_length=1000)),
                        ("user_token_issuer", models.CharField(
                            blank=True, default="", help_text="Required `iss` of user tokens (empty: not checked).",
                            max_length=500)),
                        ("user_token_audience", models.CharField(
                            blank=True, default="", help_text="Required `aud` of user tokens (empty: not checked).",
                            max_length=500)),
                        ("user_token_claim", models.CharField(
                            default="sub", help_text="The claim that names the end user.", max_length=100)),
                        ("members", models.ManyToManyField(blank=True, related_name="tambo_projects",
                                                           to=settings.AUTH_USER_MODEL)),
                    ],
                    options={"db_table": "threads_project"},
                ),
                migrations.CreateModel(
                    name="ApiKey",
                    fields=[
                        ("id", models.BigAutoField(auto_created=True, primary_key=True, serialize=False,
                                                   verbose_name="ID")),
                        ("name", models.CharField(blank=True, default="", max_length=200)),
                        ("prefix", models.CharField(editable=False, max_length=16)),
                        ("hashed_key", models.CharField(editable=False, max_length=64, unique=True)),
                        ("revoked", models.BooleanField(default=False)),
                        ("created_at", models.DateTimeField(default=core.clock.now_unique)),
                        ("last_used_at", models.DateTimeField(blank=True, null=True)),
                        ("project", models.ForeignKey(on_delete=django.db.models.deletion.CASCADE,
                                                      related_name="api_keys", to="projects.project")),
                    ],
                    options={"verbose_name": "API key", "db_table": "threads_apikey"},
                ),
            ],
            database_operations=[],
        ),
    ]
