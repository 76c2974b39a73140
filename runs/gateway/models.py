"""The gateway's model allow-list: the alias a caller names → the provider and vendor model that answer.

Settings (checked at start-up in tambo_project/settings.py):
- `GATEWAY_MODELS`: alias → "provider:model", e.g. {"gpt-4o": "openai:gpt-4o"}; "openai" alone (or
  "openai:") uses OPENAI_MODEL.
- `GATEWAY_DEFAULT_MODEL`: the alias used when a request names no model ("offline" unless set).
The alias `offline` is always allowed and is the built-in offline model, unless GATEWAY_MODELS maps
that alias itself.
"""
from __future__ import annotations

from dataclasses import dataclass

from django.conf import settings

from runs.gateway.errors import invalid

OFFLINE_ALIAS = "offline"


@dataclass(frozen=True)
class Route:
    alias: str  # what the caller named, and what every answer's `model` says
    provider: str  # "openai" | "offline"
    model: str | None  # the vendor's model name; None: the provider's default


def parse_target(target: str) -> tuple[str, str | None]:
    """'openai:gpt-4o' → ('openai', 'gpt-4o'); the model part may itself hold colons."""
    provider, _, model = target.partition(":")
    return provider.strip(), (model.strip() or None)


def allowed_models() -> dict[str, Route]:
    routes = {OFFLINE_ALIAS: Route(OFFLINE_ALIAS, "offline", None)}
    for alias, target in settings.GATEWAY_MODELS.items():
        provider, model = parse_target(target)
        routes[alias] = Route(alias, provider, model)
    return routes


def model_resolve(*, requested: str | None) -> Route:
    """The route for the requested alias (the default alias when none is named).

    Raises a 400 `model_not_found` GatewayError for a name that is not on the allow-list: the spec
    says an unknown model is 400, and the official openai client raises it as `BadRequestError`
    with `.code == "model_not_found"`.
    """
    routes = allowed_models()
    alias = requested or settings.GATEWAY_DEFAULT_MODEL
    route = routes.get(alias)
    if route is None:
        names = ", ".join(sorted(routes))
        raise invalid(f"The model {alias[:100]!r} does not exist on this server. Available models: {names}.",
                      param="model", code="model_not_found")
    return route
