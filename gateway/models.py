"""The gateway's model allow-list: the alias a caller names → the provider and vendor model that answer.

Settings (checked at start-up in tambo_project/settings.py):
- `GATEWAY_MODELS`: alias → "provider:model", e.g. {"gpt-4o": "openai:gpt-4o"}; "openai" alone (or
  "openai:") uses OPENAI_MODEL.
- `GATEWAY_DEFAULT_MODEL`: the alias used when a request names no model (unset: the server's default
  model, MODEL_PROVIDER's, which is then listed too; "offline" on a server with no model configured).
The alias `offline` is always allowed and is the built-in offline model, unless GATEWAY_MODELS maps
that alias itself.

`ALLOWED_MODELS` (names at the server's own endpoint, as for runs) are listed too.

A project with a `models` list or `allowedModels` (docs/models.md) replaces all of this for its keys:
its models and `allowedModels` are what it may call (the first is the default), through the same fallbacks, keys
and parameters as its runs (projects/models_config.py).
"""
from __future__ import annotations

import time
from dataclasses import dataclass

from django.conf import settings

from gateway.errors import GatewayError, invalid
from projects.config import project_settings
from projects.models_config import ANY_MODEL, project_model_names, project_targets
from providers.parameters import supported_parameters

OFFLINE_ALIAS = "offline"
# OpenAI's Model object has a creation time; the allow-list comes from settings, so the time the
# process read them stands in for it.
LISTED_SINCE = int(time.time())


@dataclass(frozen=True)
class Route:
    alias: str  # what the caller named, and what every answer's `model` says
    provider: str  # "openai" | "offline"
    model: str | None  # the vendor's model name; None: the provider's default
    project_model: bool = False  # one of the caller's project's models: its chain answers


def parse_target(target: str) -> tuple[str, str | None]:
    """'openai:gpt-4o' → ('openai', 'gpt-4o'); the model part may itself hold colons."""
    provider, _, model = target.partition(":")
    return provider.strip(), (model.strip() or None)


def _server_default() -> Route | None:
    """The server's default model as a route, when it is a real one (MODEL_PROVIDER not offline)."""
    if settings.MODEL_PROVIDER == "offline":
        return None
    model = settings.OPENAI_MODEL if settings.MODEL_PROVIDER == "openai" else settings.ANTHROPIC_MODEL
    return Route(model, settings.MODEL_PROVIDER, model)


def _has_own_models(project) -> bool:
    """A project that names its models or its allowed names: its own list replaces the server's."""
    if project is None:
        return False
    config = project_settings(project)
    return bool(config.models or config.allowed_models)


def allowed_models(project=None) -> dict[str, Route]:
    if _has_own_models(project):
        providers = {t.model: t.provider for t in project_targets(project)}
        first = project_targets(project)[0].provider
        return {name: Route(name, providers.get(name, first), name, project_model=True)
                for name in project_model_names(project)}
    routes = {OFFLINE_ALIAS: Route(OFFLINE_ALIAS, "offline", None)}
    default = _server_default()
    if default is not None:
        routes[default.alias] = default
    # The names the server allows every project (ALLOWED_MODELS), at its own endpoint, as for runs.
    for name in settings.ALLOWED_MODELS:
        if name != ANY_MODEL:
            routes[name] = Route(name, settings.MODEL_PROVIDER, name)
    for alias, target in settings.GATEWAY_MODELS.items():
        provider, model = parse_target(target)
        routes[alias] = Route(alias, provider, model)
    return routes


def default_alias(project=None) -> str:
    if _has_own_models(project):
        return project_model_names(project)[0]
    if settings.GATEWAY_DEFAULT_MODEL:
        return settings.GATEWAY_DEFAULT_MODEL
    default = _server_default()
    return default.alias if default is not None else OFFLINE_ALIAS


def model_resolve(*, requested: str | None, project=None) -> Route:
    """The route for the requested alias (the default alias when none is named).

    Raises a 400 `model_not_found` GatewayError for a name that is not on the allow-list: the spec
    says an unknown model is 400, and the official openai client raises it as `BadRequestError`
    with `.code == "model_not_found"`.
    """
    routes = allowed_models(project)
    alias = requested or default_alias(project)
    route = routes.get(alias)
    if route is None and not _has_own_models(project) and ANY_MODEL in settings.ALLOWED_MODELS:
        route = Route(alias, settings.MODEL_PROVIDER, alias)
    if route is None:
        names = ", ".join(sorted(routes))
        raise invalid(f"The model {alias[:100]!r} does not exist on this server. Available models: {names}.",
                      param="model", code="model_not_found")
    return route


def model_card(route: Route) -> dict:
    """A route as OpenAI's Model object (`GET /api/models`)."""
    return {"id": route.alias, "object": "model", "created": LISTED_SINCE,
            "owned_by": "tambo-django" if route.provider == OFFLINE_ALIAS else route.provider,
            # What a request to this model may send and have honoured (others: 400 naming them).
            "supported_parameters": supported_parameters(route.provider)}


def model_list(project=None) -> dict:
    """The allow-list as OpenAI's list of models, the default model first."""
    default = default_alias(project)
    routes = sorted(allowed_models(project).values(), key=lambda r: (r.alias != default, r.alias))
    return {"object": "list", "data": [model_card(route) for route in routes]}


def model_get(*, alias: str, project=None) -> dict:
    """One model of the allow-list; a 404 `model_not_found` GatewayError for any other name."""
    route = allowed_models(project).get(alias)
    if route is None:
        raise GatewayError(404, f"The model {alias[:100]!r} does not exist on this server.",
                           param="model", code="model_not_found")
    return model_card(route)
