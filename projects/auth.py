"""Who is calling: a project (by API key, or by a logged-in browser session) and an end user.

Every entry point resolves a `Principal` here and passes it to the services, which scope every
query by (project, user key). A session user gets a fixed user key of its own, so the browser page
can never act as another end user; an API-key caller names the end user with `userKey`, or carries
an access token from `/oauth/token` (`Authorization: Bearer`, projects/user_tokens.py) that names it.
The three are kept apart in what is stored (projects/identities.py).
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings
from django.middleware.csrf import CsrfViewMiddleware
from django.utils import timezone
from rest_framework import authentication

from core.db import db_call
from core.problems import Problem, validation_error
from projects import access, identities, user_tokens
from projects.models import ApiKey, Project, hash_api_key
from projects.statements import KEY_LOOKUP, KeyLookup

UNAUTHORIZED = Problem(401, "UNAUTHORIZED", "A valid x-api-key header is required.")


@dataclass(frozen=True)
class Principal:
    project: Project
    # Set for browser sessions: the only user key this caller may act as.
    session_user_key: str | None = None
    api_key_id: int | None = None
    # Set for bearer access tokens: the stored key of the end user the token names.
    token_user_key: str | None = None
    # DRF's IsAuthenticated reads this from `request.user`, which is the principal.
    is_authenticated = True

    def user_key_checked(self, raw: object) -> str:
        """The end user this request acts for, from the `userKey` the caller sent, checked: raises a 400
        VALIDATION_ERROR when an API-key caller sends none, one too long or one with a reserved prefix,
        or when a bearer token's caller names another user than the token's (a session acts as its own
        user whatever it sends)."""
        if self.session_user_key is not None:
            return self.session_user_key
        if self.token_user_key is not None:
            return self._token_user(raw)
        if not isinstance(raw, str) or not raw.strip():
            raise validation_error("userKey is required.", field="userKey")
        access.user_key_allowed(self.project)
        value = raw.strip()
        if len(value) > identities.USER_KEY_MAX_LENGTH:
            raise validation_error(f"userKey must be at most {identities.USER_KEY_MAX_LENGTH} characters.",
                                   field="userKey")
        if identities.is_reserved(value):
            # Else a copied key could name a token user or a page login (projects/identities.py).
            raise validation_error("userKey must not begin with "
                                   f"{' or '.join(map(repr, identities.RESERVED_PREFIXES))}.", field="userKey")
        return value

    def user_key_optional(self, raw: object) -> str | None:
        """For the thread-scoped routes @tambo-ai/client calls without a user (thread names and
        suggestions): None when an API-key caller sends no userKey, and the thread id alone then
        scopes the call, as on the reference server; refused under tokenRequired (401)."""
        if self.session_user_key is None and self.token_user_key is None and (
                raw is None or (isinstance(raw, str) and not raw.strip())):
            access.user_key_allowed(self.project)
            return None
        return self.user_key_checked(raw)

    def _token_user(self, raw: object) -> str:
        # The official clients send no userKey with a token; one that is sent must name the same user.
        if raw is None or (isinstance(raw, str) and not raw.strip()):
            return self.token_user_key
        if not isinstance(raw, str) or raw.strip() != identities.user_key_shown(self.token_user_key):
            raise validation_error("userKey differs from the user of the bearer token.", field="userKey")
        return self.token_user_key

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


def _bearer_from_headers(meta: dict) -> str | None:
    """An access token in `Authorization: Bearer` (a `tk_` bearer is a project key, see above)."""
    auth = meta.get("HTTP_AUTHORIZATION", "")
    if not auth.lower().startswith("bearer "):
        return None
    token = auth[7:].strip()
    return token if token and not token.startswith("tk_") else None


def _has_credentials(meta: dict) -> bool:
    return _key_from_headers(meta) is not None or _bearer_from_headers(meta) is not None


def api_key_find(raw_key: str) -> ApiKey | None:
    """The unrevoked key with this value, with its project; writes nothing. One statement, not
    compiled per call (projects/statements.py)."""
    found = KEY_LOOKUP.find(raw_key)
    return found[0] if found is not None else None


def api_key_touch(key: ApiKey) -> None:
    # Cheap enough, and it lets an operator see in the admin which keys are in use.
    if key.last_used_at is None or (timezone.now() - key.last_used_at).total_seconds() > 60:
        ApiKey.objects.filter(pk=key.pk).update(last_used_at=timezone.now())


def principal_for_bearer(token: str, raw_key: str | None) -> Principal:
    """The caller of an access token, checked on every request: the token's signature and expiry, the
    API key it was issued through (revoking that key ends its tokens at once), and, when an x-api-key
    comes with it, that both belong to the same project. Raises 401 Problem."""
    try:
        # Unverified, to find the project whose secret verifies it; verified before anything is used.
        said = user_tokens.access_token_peek(token)
        issuer = ApiKey.objects.select_related("project").filter(
            pk=said.api_key_id, project_id=said.project_id, revoked=False).first()
        if issuer is None:
            raise Problem(401, "UNAUTHORIZED", "The API key this access token was issued through is revoked.")
        claims = user_tokens.access_token_verify(token, issuer.project)
    except user_tokens.AccessTokenInvalid as exc:
        raise Problem(401, "UNAUTHORIZED", str(exc)) from None
    if raw_key is not None:
        key = issuer if issuer.hashed_key == hash_api_key(raw_key) else api_key_find(raw_key)
        if key is None:
            raise UNAUTHORIZED
        if key.project_id != issuer.project_id:
            raise Problem(401, "UNAUTHORIZED", "The bearer access token belongs to another project.")
    api_key_touch(issuer)
    return Principal(project=issuer.project, api_key_id=issuer.pk,
                     token_user_key=identities.token_user(claims.user_key))


def principal_for_user(user) -> Principal:
    project = user.tambo_projects.order_by("created_at").first()
    if project is None:
        project, _ = Project.objects.get_or_create(name=settings.WEB_PROJECT_NAME)
    return Principal(project=project, session_user_key=identities.login_user(user.pk))


def _csrf_failure(request) -> bool:
    check = CsrfViewMiddleware(lambda r: None)
    check.process_request(request)
    return check.process_view(request, None, (), {}) is not None


@dataclass(frozen=True)
class Caller:
    """Who is calling, and the `lookup`'s extra columns of the key's project (None when the caller
    was not found by that lookup: a bearer token, a session)."""

    principal: Principal
    key_extra: tuple | None = None
    key: ApiKey | None = None  # the key it was found by, when it was (a bearer's issuer is not this)


def caller_resolve(request, *, lookup: KeyLookup = KEY_LOOKUP, key_only: bool = False,
                   touch: bool = True) -> Caller:
    """The one resolution of who is calling, for every route: a project key (`x-api-key`, or a `tk_`
    bearer for the gateway's OpenAI clients), a bearer access token, or the page's session, in that
    order; then the project's rules that hold before any body is read: a revoked key or token is
    refused (401), and a browser origin the project does not list (403 ORIGIN_NOT_ALLOWED,
    projects/access.py). `tokenRequired` is applied where a userKey is read
    (`Principal.user_key_checked`).

    Options, never copies of this path: `lookup` reads more columns of the key's project in the key's
    own statement (the run start reads the project's tools so, runs/start.py); `key_only` accepts an
    `x-api-key` alone and `touch=False` leaves the key's last use unnoted (the token exchange notes it
only on success, projects/oauth.py). Synchronous (database work); async views
    call `principal_aresolve`. Raises 401/403 Problem."""
    meta = request.META
    if key_only:
        raw = (meta.get("HTTP_X_API_KEY") or "").strip() or None
        bearer = None
    else:
        raw = _key_from_headers(meta)
        bearer = _bearer_from_headers(meta)
    if bearer:
        caller = Caller(principal_for_bearer(bearer, raw))
    elif raw:
        found = lookup.find(raw)
        if found is None:
            raise UNAUTHORIZED
        key = found[0]
        if touch:
            api_key_touch(key)
        caller = Caller(Principal(project=key.project, api_key_id=key.pk), key_extra=found[1], key=key)
    else:
        return Caller(_session_principal(request))
    access.origin_check(caller.principal.project, meta)
    return caller


def _session_principal(request) -> Principal:
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        # A session is a browser: unsafe methods need the CSRF token, like any Django form.
        if request.method not in ("GET", "HEAD", "OPTIONS") and _csrf_failure(request):
            raise Problem(403, "CSRF_FAILED", "CSRF token missing or incorrect.")
        return principal_for_user(user)
    raise UNAUTHORIZED


def principal_resolve(request) -> Principal:
    """`caller_resolve`'s principal, for views that need nothing else. Raises 401/403 Problem."""
    return caller_resolve(request).principal


def staff_resolve(request):
    """The operator behind an admin session, for the routes only an operator may call (DELETE
    /v1/users/{userKey}): a staff user of the admin with the permission to delete threads, and the
    CSRF token, as any unsafe request of a session. Project keys carry no scopes, so a key or an access
    token is refused (403), as is a session user who is not such staff. Raises 401/403 Problem."""
    if _key_from_headers(request.META) is not None or _bearer_from_headers(request.META) is not None:
        raise Problem(403, "FORBIDDEN", "This route is for the admin's staff: API keys and access tokens carry "
                                        "no admin scope. Use the admin session or `manage.py forget_user`.")
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        raise Problem(401, "UNAUTHORIZED", "Log in to the admin (/admin/) as staff.")
    if not (user.is_active and user.is_staff and user.has_perm("threads.delete_thread")):
        raise Problem(403, "FORBIDDEN", "Only the admin's staff with the permission to delete threads may do this.")
    if request.method not in ("GET", "HEAD", "OPTIONS") and _csrf_failure(request):
        raise Problem(403, "CSRF_FAILED", "CSRF token missing or incorrect.")
    return user


async def principal_aresolve(request) -> Principal:
    """The same for async views. All of its database work, the session user's included (loaded
    lazily by `request.user`), runs on the shared database threads (core/db.py), so a
    streaming answer holds no connection for the request."""
    return await db_call(principal_resolve, request)


class ApiKeyAuthentication(authentication.BaseAuthentication):
    """DRF authentication: `x-api-key`, a bearer access token, or a logged-in session (with CSRF)."""

    def authenticate(self, request):
        django_request = request._request
        if not _has_credentials(django_request.META):
            user = getattr(django_request, "user", None)
            if user is None or not user.is_authenticated:
                return None
        principal = principal_resolve(django_request)
        return (principal, None)

    def authenticate_header(self, request) -> str:
        # Makes DRF answer 401 (not 403) when the key is missing.
        return "x-api-key"
