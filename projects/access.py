"""A project's access settings, enforced (docs/abuse-and-limits.md).

- `allowedOrigins`: a browser request (it carries `Origin`) from a site not listed is refused 403
  `ORIGIN_NOT_ALLOWED`, so a key copied out of one app's bundle does not work on another site. Servers
  and CLIs send no `Origin` and are not affected; preflights are answered by the CORS middleware before
  any project is known, as in section 9.
- `tokenRequired`: an end user named by `userKey` is refused 401 `USER_TOKEN_REQUIRED`; only a bearer
  access token (section 10) can name one.

Both are read from the project's parsed settings (projects/config.py), which costs no statement.
"""
from __future__ import annotations

from core.problems import Problem
from projects.config import project_settings

USER_TOKEN_REQUIRED = Problem(401, "USER_TOKEN_REQUIRED",
                              "This project requires a user token: exchange the app's user token at /oauth/token "
                              "and send `Authorization: Bearer <access token>` instead of a userKey.")


def origin_normal(origin: str) -> str:
    """`Origin` as browsers send it: scheme://host[:port], lower-cased, no trailing slash."""
    return origin.strip().rstrip("/").lower()


def origin_check(project, meta: dict) -> None:
    """Raises 403 ORIGIN_NOT_ALLOWED when the request comes from a browser origin the project does not
    list. `Origin: null` (a sandboxed frame, a file:// page, some redirects) names no site, so it is
    never one of the listed ones."""
    allowed = project_settings(project).allowed_origins
    origin = meta.get("HTTP_ORIGIN")
    if not allowed or origin is None:
        return
    if origin_normal(origin) not in {origin_normal(o) for o in allowed}:
        shown = origin if len(origin) <= 200 else origin[:200] + "…"
        raise Problem(403, "ORIGIN_NOT_ALLOWED", f"This project's key may not be used from the origin {shown!r}.",
                      origin=shown)


def user_key_allowed(project) -> None:
    """Raises 401 USER_TOKEN_REQUIRED when the project identifies its end users by token only."""
    if project_settings(project).token_required:
        raise USER_TOKEN_REQUIRED
