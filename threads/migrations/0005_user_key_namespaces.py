"""Token users and page logins move out of the userKey namespace (projects/identities.py).

Before, a token's user `alice`, a `userKey` of `alice` and the page login `web-user-1` were one string
space, so a copied API key could name either of the others. Existing rows are sorted as best they can be:

- `web-user-<n>` (what the page stored for login `n`) becomes `login:<n>`;
- in a project with user-token settings, every other row becomes the token user's (`token:<key>`): the
  exchange only worked there, and such projects identify their users by token;
- elsewhere a row whose key now begins with a reserved prefix (a `userKey` that could name a token
  user) is set aside under `login:key:…`, which no request can name; the rest stay as they are.
"""
from django.db import migrations, models
from django.db.models import F, Q, Value
from django.db.models.functions import Concat, Substr

WEB_USER = r"^web-user-[0-9]+$"


def forwards(apps, schema_editor):
    Thread = apps.get_model("threads", "Thread")
    Project = apps.get_model("projects", "Project")
    with_tokens = Project.objects.exclude(user_token_hs256_secret="", user_token_public_key="",
                                          user_token_jwks_url="").values("pk")
    reserved = Q(user_key__startswith="token:") | Q(user_key__startswith="login:")
    Thread.objects.exclude(project__in=with_tokens).filter(reserved).update(
        user_key=Concat(Value("login:key:"), F("user_key")))
    Thread.objects.filter(user_key__regex=WEB_USER).update(
        user_key=Concat(Value("login:"), Substr(F("user_key"), len("web-user-") + 1)))
    Thread.objects.filter(project__in=with_tokens).exclude(user_key__startswith="login:").update(
        user_key=Concat(Value("token:"), F("user_key")))


def backwards(apps, schema_editor):
    Thread = apps.get_model("threads", "Thread")
    Thread.objects.filter(user_key__startswith="token:").update(user_key=Substr(F("user_key"), len("token:") + 1))
    Thread.objects.filter(user_key__startswith="login:key:").update(
        user_key=Substr(F("user_key"), len("login:key:") + 1))
    Thread.objects.filter(user_key__regex=r"^login:[0-9]+$").update(
        user_key=Concat(Value("web-user-"), Substr(F("user_key"), len("login:") + 1)))


class Migration(migrations.Migration):

    dependencies = [
        ("projects", "0004_project_settings"),
        ("threads", "0004_project_and_apikey_moved_to_projects"),
    ]

    operations = [
        migrations.AlterField(model_name="thread", name="user_key", field=models.CharField(max_length=300)),
        migrations.RunPython(forwards, backwards),
    ]
