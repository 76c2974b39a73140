"""Opaque keyset cursors over (created_at, id).

A cursor names the last row of a page; the next page starts strictly after it in the page's order.
Ties on created_at are broken by id, so pages never skip or repeat rows.
"""
from __future__ import annotations

import base64
import json
from datetime import datetime, timezone

from django.db.models import Q, QuerySet

from core import sanity
from core.problems import Problem


def encode_cursor(created_at: datetime, row_id: str) -> str:
    raw = json.dumps([created_at.isoformat(), row_id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str]:
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        # The server's checked parser: a forged cursor cannot smuggle NUL or deep nesting in.
        created, row_id = sanity.loads(base64.urlsafe_b64decode(padded.encode()))
        parsed = datetime.fromisoformat(created)
        if not isinstance(row_id, str) or parsed.tzinfo is None:
            raise ValueError
        # The database compares in UTC; a forged year-1 or year-9999 time may not fit there.
        return parsed.astimezone(timezone.utc), row_id
    except (ValueError, TypeError, OverflowError, UnicodeDecodeError, sanity.InputError):
        raise Problem(400, "INVALID_CURSOR", "The cursor is not valid.") from None


def keyset_page(qs: QuerySet, *, cursor: str | None, limit: int, descending: bool) -> tuple[list, str | None, bool]:
    """One page of `qs` ordered by (created_at, id); returns rows, next cursor, has_more."""
    if cursor:
        created, row_id = decode_cursor(cursor)
        if descending:
            qs = qs.filter(Q(created_at__lt=created) | Q(created_at=created, id__lt=row_id))
        else:
            qs = qs.filter(Q(created_at__gt=created) | Q(created_at=created, id__gt=row_id))
    order = ("-created_at", "-id") if descending else ("created_at", "id")
    rows = list(qs.order_by(*order)[: limit + 1])
    has_more = len(rows) > limit
    rows = rows[:limit]
    next_cursor = encode_cursor(rows[-1].created_at, rows[-1].id) if has_more else None
    return rows, next_cursor, has_more
