"""`POST /oauth/token`: RFC 8693 token exchange (docs/protocol.md#identity-by-token).

`@tambo-ai/react` with `userToken` (and `@tambo-ai/typescript-sdk` `beta.auth.getToken`) posts the
app's user token here, form-encoded, with the project API key in `x-api-key`, and sends the access
token it gets back as `Authorization: Bearer` on every later call.

Answers follow OAuth (RFC 6749 5.1 and 5.2), not the problem+json of /v1, because OAuth clients read
`error` and `error_description`. The exchange writes nothing, except noting the key's last use on success.
"""
from __future__ import annotations

from urllib.parse import parse_qsl

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.problems import Problem, response_for
from projects import user_tokens
from projects.auth import api_key_touch, caller_resolve
from projects.user_tokens import IssuedToken, TokenRefused

FORM_CONTENT_TYPE = "application/x-www-form-urlencoded"
TOKEN_EXCHANGE_GRANT = "urn:ietf:params:oauth:grant-type:token-exchange"
ACCESS_TOKEN_TYPE = "urn:ietf:params:oauth:token-type:access_token"
SUBJECT_TOKEN_TYPES = frozenset({ACCESS_TOKEN_TYPE, "urn:ietf:params:oauth:token-type:id_token",
                                 "urn:ietf:params:oauth:token-type:jwt"})
MAX_FORM_FIELDS = 20
MAX_SUBJECT_TOKEN_LENGTH = 16_000


class ClientRefused(Exception):
    """The API key is missing, unknown or revoked: OAuth's `invalid_client`."""


def _form(request: HttpRequest) -> dict[str, str]:
    """The form body, strictly parsed: a parameter given twice is refused (RFC 6749 3.2)."""
    if request.content_type != FORM_CONTENT_TYPE:
        raise TokenRefused("invalid_request", f"Send the body as {FORM_CONTENT_TYPE}.")
    try:
        pairs = parse_qsl(request.body.decode("utf-8"), keep_blank_values=True, strict_parsing=True,
                          errors="strict", max_num_fields=MAX_FORM_FIELDS)
    except (UnicodeDecodeError, ValueError):
        raise TokenRefused("invalid_request", "The body is not valid form encoding.") from None
    form: dict[str, str] = {}
    for name, value in pairs:
        if name in form:
            raise TokenRefused("invalid_request", f"`{name}` is given more than once.")
        form[name] = value
    return form


def _subject_token(form: dict[str, str]) -> str:
    grant_type = form.get("grant_type", "")
    if not grant_type:
        raise TokenRefused("invalid_request", "`grant_type` is required.")
    if grant_type != TOKEN_EXCHANGE_GRANT:
        raise TokenRefused("unsupported_grant_type", f"Only `{TOKEN_EXCHANGE_GRANT}` is supported.")
    token = form.get("subject_token", "").strip()
    if not token:
        raise TokenRefused("invalid_request", "`subject_token` is required.")
    if len(token) > MAX_SUBJECT_TOKEN_LENGTH:
        raise TokenRefused("invalid_request", "`subject_token` is too long.")
    if form.get("subject_token_type") not in SUBJECT_TOKEN_TYPES:
        raise TokenRefused("invalid_request", f"`subject_token_type` must be `{ACCESS_TOKEN_TYPE}` or "
                                              "`urn:ietf:params:oauth:token-type:id_token`.")
    return token


def token_exchange(*, request: HttpRequest) -> IssuedToken:
    """Verifies the caller's key and subject token and issues an access token.

    Raises ClientRefused or TokenRefused; writes nothing before everything has been checked.
    """
    try:
        # The one resolution of the caller (projects/auth.py): the key alone, its origin checked.
        key = caller_resolve(request, key_only=True, touch=False).key
    except Problem as problem:
        if problem.status == 401:
            raise ClientRefused() from None
        raise
    token = _subject_token(_form(request))
    subject = user_tokens.subject_token_verify(project=key.project, token=token)
    issued = user_tokens.access_token_issue(project=key.project, user_key=subject.user_key,
                                            api_key_id=key.pk, subject_expires_at=subject.expires_at)
    api_key_touch(key)
    return issued


# A request refused before the view runs: a bad body or Host, a body too large or too slow, no CSRF token.
_INVALID_REQUEST_STATUSES = (400, 403, 408, 413)


def oauth_error_for(problem: Problem, instance: str) -> HttpResponse:
    """The token exchange's error shape (core/error_shapes.py, projects/apps.py): a refused request is
    OAuth's `invalid_request`, a key used from an origin its project does not allow
    `unauthorized_client` (with our code, for the reader). RFC 6749 has no error for an unknown path, a
    wrong method or a server fault, which stay problem+json."""
    if problem.code == "ORIGIN_NOT_ALLOWED":
        return oauth_answer({"error": "unauthorized_client", "error_description": problem.detail,
                             "code": problem.code}, problem.status)
    if problem.status not in _INVALID_REQUEST_STATUSES:
        return response_for(problem, instance)
    return oauth_answer({"error": "invalid_request", "error_description": problem.detail}, problem.status)


def oauth_answer(body: dict, status: int) -> JsonResponse:
    response = JsonResponse(body, status=status)
    # Token answers must not be cached (RFC 6749 5.1).
    response["Cache-Control"] = "no-store"
    response["Pragma"] = "no-cache"
    return response


@csrf_exempt  # authenticated by the API key alone, never by a cookie
@require_POST
def token_view(request: HttpRequest) -> JsonResponse:
    try:
        issued = token_exchange(request=request)
    except ClientRefused:
        return oauth_answer({"error": "invalid_client",
                        "error_description": "A valid project API key is required in x-api-key."}, 401)
    except TokenRefused as refused:
        return oauth_answer({"error": refused.error, "error_description": refused.description}, 400)
    return oauth_answer({"access_token": issued.token, "token_type": "Bearer", "expires_in": issued.expires_in,
                    "issued_token_type": ACCESS_TOKEN_TYPE}, 200)
