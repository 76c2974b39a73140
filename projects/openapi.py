"""The OpenAPI description of identity by token (docs/protocol.md#identity-by-token): `POST /oauth/token` and the bearer scheme.

`/oauth/token` is a plain Django view answering in OAuth's shape (projects/oauth.py), which
drf-spectacular cannot see; tambo_project/openapi.py, which assembles the whole document, adds what is
here to it.
"""
from __future__ import annotations

from typing import Any

from core.openapi import BEARER_SCHEME
from projects.oauth import ACCESS_TOKEN_TYPE, SUBJECT_TOKEN_TYPES, TOKEN_EXCHANGE_GRANT

BEARER_DEFINITION = {
    "type": "http",
    "scheme": "bearer",
    "bearerFormat": "JWT",
    "description": "An access token from `POST /oauth/token`. It names the end user, so no `userKey` is needed "
                   "(one that is sent must be the same). Usually sent together with `x-api-key`, as the official "
                   "SDKs do; revoking the API key it was issued through ends it at once.",
}

_TOKEN_REQUEST = {
    "type": "object",
    "required": ["grant_type", "subject_token", "subject_token_type"],
    "properties": {
        "grant_type": {"type": "string", "enum": [TOKEN_EXCHANGE_GRANT]},
        "subject_token": {"type": "string", "description": "The app's JWT for its end user, verified with the "
                                                            "project's user-token settings."},
        "subject_token_type": {"type": "string", "enum": sorted(SUBJECT_TOKEN_TYPES)},
        "audience": {"type": "string", "description": "Accepted and ignored."},
        "scope": {"type": "string", "description": "Accepted and ignored."},
    },
}
_TOKEN_RESPONSE = {
    "type": "object",
    "required": ["access_token", "token_type", "expires_in", "issued_token_type"],
    "properties": {
        "access_token": {"type": "string", "description": "Send as `Authorization: Bearer <access_token>`."},
        "token_type": {"type": "string", "enum": ["Bearer"]},
        "expires_in": {"type": "integer", "description": "Seconds; at most 3600, never past the subject "
                                                         "token's `exp`."},
        "issued_token_type": {"type": "string", "enum": [ACCESS_TOKEN_TYPE]},
    },
}
_OAUTH_ERROR = {
    "type": "object",
    "description": "An OAuth error (RFC 6749 section 5.2).",
    "required": ["error", "error_description"],
    "properties": {
        "error": {"type": "string",
                  "enum": ["invalid_request", "unsupported_grant_type", "invalid_grant", "invalid_client"]},
        "error_description": {"type": "string"},
    },
}


def _json(description: str, name: str) -> dict[str, Any]:
    return {"description": description,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}}


def add_token_exchange(result: dict[str, Any], api_key_scheme: str) -> None:
    """Adds `POST /oauth/token`, its schemas and the bearer scheme to a generated schema."""
    components = result.setdefault("components", {})
    components.setdefault("securitySchemes", {})[BEARER_SCHEME] = BEARER_DEFINITION
    schemas = components.setdefault("schemas", {})
    schemas.update(OAuthTokenRequest=_TOKEN_REQUEST, OAuthTokenResponse=_TOKEN_RESPONSE, OAuthError=_OAUTH_ERROR)
    result.setdefault("paths", {})["/oauth/token"] = {"post": {
        "operationId": "oauthTokenExchange",
        "summary": "Exchange an app's user token for an access token (RFC 8693)",
        "description": "Verifies `subject_token` with the project's user-token settings (an HS256 secret, a PEM "
                       "public key or a JWKS URL; `exp` required, `iss`/`aud` checked when configured, 60 s "
                       "leeway) and answers an access token naming the end user. A project without settings "
                       "answers `invalid_request`. Nothing is written on any error.",
        "tags": ["auth"],
        "security": [{api_key_scheme: []}],
        "requestBody": {"required": True, "content": {
            "application/x-www-form-urlencoded": {"schema": {"$ref": "#/components/schemas/OAuthTokenRequest"}}}},
        "responses": {
            "200": _json("The access token.", "OAuthTokenResponse"),
            "400": _json("`invalid_request` (not a valid form, a missing parameter, no user-token settings), "
                         "`unsupported_grant_type`, or `invalid_grant` (the subject token does not verify).",
                         "OAuthError"),
            "401": _json("`invalid_client`: a missing, unknown or revoked API key.", "OAuthError"),
        },
    }}
