"""Bad JSON values and the means to plant them in a request body, for the input-sanity tests.

The values are raw JSON text, because most of them cannot be produced by `json.dumps` from a
Python value (a 5,000-digit integer, a lone surrogate that must stay lone) or are not JSON at all.
"""
from __future__ import annotations

import copy
import json
import re
from typing import Any

import requests

SLOT = "\x01bad-value\x01"

# Refused in any string: PostgreSQL cannot store NUL; a lone surrogate cannot be encoded as UTF-8.
BAD_TEXT = {
    "nul": '"a\\u0000b"',
    "lone_surrogate": '"x\\ud800y"',
}
# Refused as any JSON value.
BAD_VALUES = {
    **BAD_TEXT,
    "nan": "NaN",
    "infinity": "Infinity",
    "minus_infinity": "-Infinity",
    "overflowing_float": "1e999",
    "integer_of_5000_digits": "9" * 5000,
    "integer_beyond_2_53": str(2**53),
    "nested_900_levels": '{"a": ' * 900 + "1" + "}" * 900,
    "key_with_nul": '{"k\\u0000": 1}',
}
# A body that is not an object but nests 100,000 levels (RecursionError in a recursive parser).
DEEP_ARRAY = b"[" * 100_000


def planted(body: dict[str, Any], field: str, bad_json: str) -> bytes:
    """`body` as JSON text with the value at `field` (`a.b[0].c`) replaced by the raw `bad_json`."""
    body = copy.deepcopy(body)
    steps = [int(s) if s.isdigit() else s for s in re.findall(r"[^.\[\]]+", field)]
    node = body
    for step in steps[:-1]:
        node = node[step]
    node[steps[-1]] = SLOT
    text = json.dumps(body)
    assert text.count(json.dumps(SLOT)) == 1
    return text.replace(json.dumps(SLOT), bad_json).encode()


def send(api, method: str, path: str, raw: bytes, **params) -> requests.Response:
    """Send raw JSON bytes with the api's key; the answer is read whole (a refused run never streams)."""
    return api.session.request(method, api.base_url + path, data=raw, params=params or None, timeout=60,
                               headers={"Content-Type": "application/json"})


def row_counts() -> dict[str, int]:
    """Rows in every table a request could write to."""
    from runs.models import Run
    from threads.models import Message, Suggestion, Thread

    return {model.__name__: model.objects.count() for model in (Thread, Message, Run, Suggestion)}
