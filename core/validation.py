"""Pydantic at the edge of a view: request bodies and query values in, 400 problems naming the field out."""
from __future__ import annotations

from typing import TypeVar

from pydantic import BaseModel, ValidationError

from core.problems import validation_error

M = TypeVar("M", bound=BaseModel)


def _field_path(loc: tuple, data: object = None) -> str:
    """The dotted path of an error's location in the request body.

    Pydantic puts a discriminated union's tag (a block's `type`, a message's `role`) into the location, as in
    `message.content.0.text.text`; it is not a field, so it is dropped by looking at the data.
    """
    parts = []
    node, tag_dropped = data, False
    for position, part in enumerate(loc):
        if isinstance(part, int):
            parts.append(f"[{part}]")
            node = node[part] if isinstance(node, list) and -len(node) <= part < len(node) else None
            tag_dropped = False
            continue
        if (part.startswith(("function-", "literal[", "list[", "tagged-union["))
                or part in {"str", "int", "float", "bool", "dict"}):
            continue  # pydantic's names for union branches, not fields
        # AG-UI messages are discriminated by `role` rather than `type`.
        if (isinstance(node, dict) and not tag_dropped and part in (node.get("type"), node.get("role"))
                and position < len(loc) - 1):
            tag_dropped = True
            continue
        parts.append(("." if parts else "") + part)
        node = node.get(part) if isinstance(node, dict) else None
        tag_dropped = False
    return "".join(parts) or "body"


def parse_body(model: type[M], data: object) -> M:
    if not isinstance(data, dict):
        raise validation_error("The request body must be a JSON object.", field="body")
    try:
        return model.model_validate(data, by_alias=True, by_name=True)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        field = _field_path(tuple(error["loc"]), data)
        raise validation_error(f"{field}: {error['msg']}", field=field,
                               errors=[{"field": _field_path(tuple(e["loc"]), data), "message": e["msg"]}
                                       for e in exc.errors(include_url=False)[:20]]) from None


def int_param(raw: str | None, *, name: str, default: int, low: int, high: int) -> int:
    if raw is None or raw == "":
        return default
    try:
        value = int(raw)
    except ValueError:
        raise validation_error(f"{name} must be an integer.", field=name) from None
    if not low <= value <= high:
        raise validation_error(f"{name} must be between {low} and {high}.", field=name)
    return value


def choice_param(raw: str | None, *, name: str, default: str, choices: tuple[str, ...]) -> str:
    if raw is None or raw == "":
        return default
    if raw not in choices:
        raise validation_error(f"{name} must be one of {', '.join(choices)}.", field=name)
    return raw
