"""Projects and their API keys: who may call the API, and how a project verifies its apps' user tokens.

Until the `projects` app existed these lived in threads/models.py; projects/migrations/0001 took them
over without touching their rows (see the docstring there).
"""
import hashlib
import secrets

from django.conf import settings
from django.db import models

from core.clock import now_unique
from core.ids import new_id


def _project_id() -> str:
    return new_id("proj")


def new_access_token_secret() -> str:
    return secrets.token_urlsafe(48)


class Project(models.Model):
    id = models.CharField(primary_key=True, max_length=40, default=_project_id, editable=False)
    name = models.CharField(max_length=200, unique=True)
    system_prompt = models.TextField(blank=True, default="")
    max_tool_calls_per_turn = models.PositiveIntegerField(
        default=100, help_text="Total tool calls the model may make in one user turn."
    )
    # Logged-in browser users act in one project; each gets its own user key (see projects/auth.py).
    members = models.ManyToManyField(settings.AUTH_USER_MODEL, blank=True, related_name="tambo_projects")
    created_at = models.DateTimeField(default=now_unique)
    # Models, access, limits and transcription (projects/config.py: the schema; docs/projects.md).
    # Bumped by every write of `settings`, so each process re-parses a project's settings once per change.
    settings = models.JSONField(default=dict, blank=True)
    settings_version = models.PositiveIntegerField(default=0, editable=False)

    # Identity by token (docs/protocol.md#identity-by-token): how an app's own user tokens are verified. At most one of
    # the three key sources is set; none set means the token exchange is refused for this project.
    user_token_hs256_secret = models.CharField(
        max_length=512, blank=True, default="", help_text="Shared secret for HS256-signed user tokens.")
    user_token_public_key = models.TextField(
        blank=True, default="", help_text="PEM public key for RS256/ES256/EdDSA-signed user tokens.")
    user_token_jwks_url = models.URLField(
        max_length=1000, blank=True, default="", help_text="JWKS URL of the identity provider.")
    user_token_issuer = models.CharField(max_length=500, blank=True, default="",
                                         help_text="Required `iss` of user tokens (empty: not checked).")
    user_token_audience = models.CharField(max_length=500, blank=True, default="",
                                           help_text="Required `aud` of user tokens (empty: not checked).")
    user_token_claim = models.CharField(max_length=100, default="sub",
                                        help_text="The claim that names the end user.")
    # Signs this project's access tokens (projects/user_tokens.py): random, never derived from
    # SECRET_KEY; `manage.py rotate_access_token_secret` replaces it, ending every token issued.
    access_token_secret = models.CharField(max_length=128, default=new_access_token_secret, editable=False)

    def __str__(self) -> str:
        return self.name


KEY_PREFIX = "tk_"


def hash_api_key(raw_key: str) -> str:
    return hashlib.sha256(raw_key.encode()).hexdigest()


class ApiKey(models.Model):
    """A project API key. Only its SHA-256 and a short visible prefix are stored, never the key."""

    project = models.ForeignKey(Project, on_delete=models.CASCADE, related_name="api_keys")
    name = models.CharField(max_length=200, blank=True, default="")
    prefix = models.CharField(max_length=16, editable=False)
    hashed_key = models.CharField(max_length=64, unique=True, editable=False)
    revoked = models.BooleanField(default=False)
    created_at = models.DateTimeField(default=now_unique)
    last_used_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        verbose_name = "API key"

    def __str__(self) -> str:
        return f"{self.prefix}… ({self.project})"

    @classmethod
    def generate(cls, project: Project, name: str = "") -> tuple["ApiKey", str]:
        """Create a key; returns the row and the full key, which is never retrievable again."""
        raw = KEY_PREFIX + secrets.token_urlsafe(32)
        key = cls.objects.create(
            project=project, name=name, prefix=raw[:11], hashed_key=hash_api_key(raw)
        )
        return key, raw


# The limits' counters live in a module of their own (projects/limits.py); imported so Django finds them.
from projects.limit_models import LimitCounter  # noqa: E402,F401
