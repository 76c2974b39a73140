"""The gateway's model allow-list: the alias a caller names → the provider and vendor model that answer.

Settings (checked at start-up in tambo_project/settings.py):
- `GATEWAY_MODELS`: alias → "provider:model", e.g. {"gpt-4o": "openai:gpt-4o"}; "openai" alone (or
  "openai:") uses OPENAI_MODEL.
- `GATEWAY_DEFAULT_MODEL`: the alias used when a request names no model ("offline" unless set).
The alias `offline` is always allowed and is the built-in offline model, unless GATEWAY_MODELS maps
that alias itself.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings

from gateway.errors import GatewayError, invalid

OFFLINE_ALIAS = "offline"
# OpenAI's Model object has a creation time; the allow-list comes from settings, so the time the
# process read them stands in for it.
LISTED_SINCE = int(time.time())


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


def model_card(route: Route) -> dict:
    """A route as OpenAI's Model object (`GET /api/models`)."""
    return {"id": route.alias, "object": "model", "created": LISTED_SINCE,
            "owned_by": "tambo-django" if route.provider == OFFLINE_ALIAS else route.provider}


def model_list() -> dict:
    """The allow-list as OpenAI's list of models, the default model first."""
    routes = sorted(allowed_models().values(),
                    key=lambda r: (r.alias != settings.GATEWAY_DEFAULT_MODEL, r.alias))
    return {"object": "list", "data": [model_card(route) for route in routes]}


def model_get(*, alias: str) -> dict:
    """One model of the allow-list; a 404 `model_not_found` GatewayError for any other name."""
    route = allowed_models().get(alias)
    if route is None:
        raise GatewayError(404, f"The model {alias[:100]!r} does not exist on this server.",
                           param="model", code="model_not_found")
    return model_card(route)
