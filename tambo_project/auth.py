"""Who is calling: a project (by API key, or by a logged-in browser session) and an end user.

Every entry point resolves a `Principal` here and passes it to the services, which scope every
query by (project, user key). A session user gets a fixed user key of its own, so the browser page
can never act as another end user; an API-key caller names the end user with `userKey`.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from rest_framework import authentication

from tambo_project.problems import Problem, validation_error
from threads.models import ApiKey, Project, hash_api_key

UNAUTHORIZED = Problem(401, "UNAUTHORIZED", "A valid x-api-key header is required.")


@dataclass(frozen=True)
class Principal:
    project: Project
    # Set for browser sessions: the only user key this caller may act as.
    session_user_key: str | None = None
    api_key_id: int | None = None
    # DRF's IsAuthenticated reads this from `request.user`, which is the principal.
    is_authenticated = True

    def user_key(self, raw: object) -> str:
        """The end user this request acts for; 400 VALIDATION_ERROR when an API-key caller sends none."""
        if self.session_user_key is not None:
            return self.session_user_key
        if not isinstance(raw, str) or not raw.strip():
            raise validation_error("userKey is required.", field="userKey")
        value = raw.strip()
        if len(value) > 256:
            raise validation_error("userKey must be at most 256 characters.", field="userKey")
        return value

    @property
    def rate_limit_key(self) -> str:
        return f"key:{self.api_key_id}" if self.api_key_id else f"session:{self.session_user_key}"


def _key_from_headers(meta: dict) -> str | None:
    key = meta.get("HTTP_X_API_KEY")
    if key:
        return key.strip()
    auth = meta.get("HTTP_AUTHORIZATION", "")
    # The gateway accepts `Authorization: Bearer <project key>` so the official openai client works.
    if auth.lower().startswith("bearer ") and auth[7:].strip().startswith("tk_"):
        return auth[7:].strip()
    return None


def principal_for_key(raw_key: str) -> Principal | None:
    key = (
        ApiKey.objects.select_related("project")
        .filter(hashed_key=hash_api_key(raw_key), revoked=False)
        .first()
    )
    if key is None:
        return None
    # Cheap enough, and it lets an operator see in the admin which keys are in use.
    if key.last_used_at is None or (timezone.now() - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())
    return Principal(project=key.project, api_key_id=key.pk)


def principal_for_user(user) -> Principal:
    project = user.tambo_projects.order_by("created_at").first()
    if project is None:
        project, _ = Project.objects.get_or_create(name=settings.WEB_PROJECT_NAME)
    return Principal(project=project, session_user_key=f"web-user-{user.pk}")


def _csrf_failure(request) -> bool:
    check = CsrfViewMiddleware(lambda r: None)
    check.process_request(request)
    return check.process_view(request, None, (), {}) is not None


def resolve_principal(request) -> Principal:
    """Synchronous resolution for plain Django views. Raises 401 Problem."""
    raw = _key_from_headers(request.META)
    if raw:
        principal = principal_for_key(raw)
        if principal is None:
            raise UNAUTHORIZED
        return principal
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        # A session is a browser: unsafe methods need the CSRF token, like any Django form.
        if request.method not in ("GET", "HEAD", "OPTIONS") and _csrf_failure(request):
            raise Problem(403, "CSRF_FAILED", "CSRF token missing or incorrect.")
        return principal_for_user(user)
    raise UNAUTHORIZED


async def aresolve_principal(request) -> Principal:
    """The same for async views. All of its database work, the session user's included (loaded
    lazily by `request.user`), runs on the shared database threads (tambo_project/db.py), so a
    streaming answer holds no connection for the request."""
    from tambo_project.db import db_call

    return await db_call(resolve_principal, request)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """DRF authentication: `x-api-key` or a logged-in session (with CSRF)."""

    def authenticate(self, request):
        django_request = request._request
        if _key_from_headers(django_request.META) is None:
            user = getattr(django_request, "user", None)
            if user is None or not user.is_authenticated:
                return None
        principal = resolve_principal(django_request)
        return (principal, None)

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) when the key is missing.
        return "x-api-key"
