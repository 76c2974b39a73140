"""Retry-After, read once for the whole tree: the client's retries, the message engine's 429 and
the server's model providers all use `retry_after_seconds`. Standard library only, so the server
imports it without the client's HTTP layer."""
from __future__ import annotations

import datetime
import email.utils
import math
import time
from collections.abc import Mapping
from typing import Any

__all__ = ["retry_after_seconds"]


def retry_after_seconds(headers: Mapping[str, Any] | Any) -> float | None:
    """Seconds to wait from `retry-after-ms`, or `retry-after` as seconds or an HTTP date.

    `headers` is any mapping with `.get` (a case-insensitive one for real responses). A value that
    is none of these (`Retry-After: soon`), not finite or negative-infinite is ignored: None. A date
    in the past and negative seconds give 0.
    """
    for name, divisor in (("retry-after-ms", 1000), ("retry-after", 1)):
        try:
            seconds = float(headers.get(name) or "nan") / divisor
        except (TypeError, ValueError):
            continue
        if math.isfinite(seconds):
            return max(seconds, 0.0)
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        moment = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if moment.tzinfo is None:
        # RFC 9110 dates are GMT; one sent with "-0000" parses without a zone and is read as GMT too
        # (a naive datetime's timestamp() would take it as the machine's local time).
        moment = moment.replace(tzinfo=datetime.timezone.utc)
    return max(moment.timestamp() - time.time(), 0.0)
