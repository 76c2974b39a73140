"""JSON documents for the property tests of partial parsing and props streaming.

Random documents come from a fixed seed, so a failure reproduces; the hand-written ones pin the
corners a generator rarely hits (escapes at every position, surrogate pairs, exponents, deep
nesting, keys that need escaping in a JSON Pointer).
"""

from __future__ import annotations

import json
import random
from typing import Any

HAND_WRITTEN = [
    "{}",
    "[]",
    '""',
    "0",
    "-0.5e-3",
    "true",
    "null",
    '{"a": 1}',
    '{"a": -12.5, "b": [true, false, null], "c": {"d": "e"}}',
    '  {  "spaced" :  [ 1 , 2 ,  3 ] ,\n\t"x" : { }  }  ',
    '{"esc": "quote \\" back \\\\ slash \\/ \\b\\f\\n\\r\\t end"}',
    '{"uni": "caf\\u00e9 \\u2603 \\ud83d\\ude00 done", "raw": "café ☃ 😀"}',
    '{"lone": "\\ud83d", "lone2": "\\ud83dx", "lone3": "\\udc00"}',
    '{"\\u0041key": "\\"", "": "empty key", "a/b": 1, "m~n": 2}',
    '{"num": [0, -0, 1e5, 1E+5, 2.5e-7, -3.25, 12345678901234567890]}',
    '[[[[[[[[[["deep"]]]]]]]]]]',
    '{"a": {"b": {"c": {"d": [1, [2, [3, {"e": "f"}]]]}}}}',
    '[{"id": 1, "tags": ["x", "y"]}, {"id": 2, "tags": []}, {"id": 3}]',
    '{"text": "' + "long string " * 20 + '"}',
    "[1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17,18,19,20,21,22,23,24,25,26,27,28,29,30]",
    '{"trailing": "\\\\"}',
    '"just a \\n string"',
    "[NaN, Infinity, -Infinity]",
]

_ALPHABET = 'abcXYZ 019_-/~"\\\n\té€😀\u2028\x01'


def _random_string(rng: random.Random) -> str:
    return "".join(rng.choice(_ALPHABET) for _ in range(rng.randint(0, 8)))


def _random_number(rng: random.Random) -> int | float:
    kind = rng.random()
    if kind < 0.4:
        return rng.randint(-1000, 1000)
    if kind < 0.8:
        return round(rng.uniform(-1000, 1000), rng.randint(0, 4))
    return rng.choice([1e-9, 6.02e23, -2.5e-300, 1e21, 123456789012345678])


def random_value(rng: random.Random, depth: int = 0) -> Any:
    roll = rng.random()
    if depth < 4 and roll < 0.25:
        return {_random_string(rng): random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}
    if depth < 4 and roll < 0.45:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    if roll < 0.7:
        return _random_string(rng)
    if roll < 0.85:
        return _random_number(rng)
    return rng.choice([True, False, None])


def random_object(rng: random.Random) -> dict[str, Any]:
    return {_random_string(rng): random_value(rng, 1) for _ in range(rng.randint(1, 5))}


def dump_randomly(rng: random.Random, value: Any) -> str:
    """Serialize with a random layout, as different models would."""
    style = rng.randrange(3)
    if style == 0:
        return json.dumps(value)
    if style == 1:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    return json.dumps(value, indent=rng.choice([1, 2]), ensure_ascii=rng.random() < 0.5)


def random_documents(seed: int, count: int) -> list[str]:
    """Mostly containers (the interesting case), with some bare scalars."""
    rng = random.Random(seed)
    docs = []
    for _ in range(count):
        roll = rng.random()
        if roll < 0.6:
            value = random_object(rng)
        elif roll < 0.85:
            value = [random_value(rng, 1) for _ in range(rng.randint(1, 5))]
        else:
            value = random_value(rng, 4)
        docs.append(dump_randomly(rng, value))
    return docs


def random_object_documents(seed: int, count: int) -> list[str]:
    rng = random.Random(seed)
    return [dump_randomly(rng, random_object(rng)) for _ in range(count)]
