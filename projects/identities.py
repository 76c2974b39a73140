"""The three kinds of end user, kept apart in the stored `Thread.user_key` (docs/abuse-and-limits.md).

An end user is named in one of three ways: by the `userKey` an API-key caller sends, by the user of a
bearer access token (the app's own user token, exchanged at /oauth/token), or by a login of the page.
They are three namespaces: a thread one of them owns must never be reachable by naming it through
another (a copied public key must not read a token user's threads by sending their `sub` as `userKey`).

A `userKey` is stored as it is sent, so existing apps and their threads keep working; token users and
page logins are stored under a prefix, and a `userKey` that begins with one of those prefixes is
refused, so no `userKey` can ever equal a token user's or a login's stored key.
"""
from __future__ import annotations

TOKEN_PREFIX = "token:"
LOGIN_PREFIX = "login:"
RESERVED_PREFIXES = (TOKEN_PREFIX, LOGIN_PREFIX)
# The longest userKey or token user.
USER_KEY_MAX_LENGTH = 256
# The column: room for a prefix in front of the longest value (and for rows the migration set aside).
STORED_MAX_LENGTH = 300


def token_user(subject: str) -> str:
    """The stored key of a bearer token's user (the claim the project names, usually `sub`)."""
    return TOKEN_PREFIX + subject


def login_user(user_pk: int) -> str:
    """The stored key of a page login (a Django user)."""
    return f"{LOGIN_PREFIX}{user_pk}"


def is_reserved(user_key: str) -> bool:
    """True when a `userKey` would name a token user or a login: such a `userKey` is refused."""
    return user_key.startswith(RESERVED_PREFIXES)


def user_key_shown(stored: str) -> str:
    """What the wire's `userKey` shows: a token user sees the user its app named, as before."""
    return stored[len(TOKEN_PREFIX):] if stored.startswith(TOKEN_PREFIX) else stored
