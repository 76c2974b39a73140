"""Which models a project's calls go to (docs/models.md): its `models` list, else the server's default.

`project_targets` turns a project's settings into `ModelTarget`s (providers/base.py) whose keys are
resolved when a call is made (projects/secrets.py); `model_chain_for` orders them for one run or
gateway call and refuses a model the project does not offer (400 MODEL_NOT_ALLOWED, before anything
is stored or called). A model spec without `apiKey` and `baseUrl` uses the server's endpoint for its
provider (`OPENAI_*`, `ANTHROPIC_*`); one with a `baseUrl` but no key sends none, so the server's
own key never reaches another vendor.
"""
from __future__ import annotations

from dataclasses import replace
from functools import partial

from django.conf import settings

from core.problems import Problem
from projects.config import ModelSpec, ProjectSettings, output_cap, project_settings
from projects.secrets import secret_resolve
from providers import default_endpoint
from providers.base import ModelTarget
from providers.chain import ModelChain


def _default_model(provider: str) -> str:
    if provider == "openai":
        return settings.OPENAI_MODEL
    if provider == "anthropic":
        return settings.ANTHROPIC_MODEL
    return "offline"


def server_target() -> ModelTarget:
    """The server-wide default model (MODEL_PROVIDER and its environment)."""
    endpoint = default_endpoint()
    return ModelTarget(provider=endpoint.provider, model=_default_model(endpoint.provider),
                       base_url=endpoint.base_url, key=endpoint.api_key,
                       parameters=dict(settings.MODEL_PARAMETERS), timeout=settings.OPENAI_TIMEOUT)


def _agent_target(spec: ModelSpec, parameters: dict) -> ModelTarget:
    # The headers resolve when the call is made, as keys do: an `env:` variable read then.
    headers = tuple(sorted(spec.headers.items()))
    return ModelTarget(provider="agent", model=spec.label_model, base_url=spec.url,
                       headers=partial(_headers_resolve, headers) if headers else None, parameters=parameters,
                       timeout=spec.timeout_seconds or settings.OPENAI_TIMEOUT)


def _headers_resolve(headers: tuple[tuple[str, str], ...]) -> tuple[tuple[str, str], ...]:
    return tuple((name, secret_resolve(value)) for name, value in headers)


def _target(spec: ModelSpec, parameters: dict) -> ModelTarget:
    if spec.provider == "agent":
        return _agent_target(spec, parameters)
    if spec.api_key is None and spec.base_url is None and spec.provider != "offline":
        endpoint = default_endpoint(spec.provider)
        base_url, key = endpoint.base_url, endpoint.api_key
    else:
        base_url, key = spec.base_url, (partial(secret_resolve, spec.api_key) if spec.api_key else None)
    return ModelTarget(provider=spec.provider, model=spec.model, base_url=base_url, key=key,
                       parameters=parameters, timeout=settings.OPENAI_TIMEOUT)


def project_targets(project) -> list[ModelTarget]:
    """The project's models in order (the first answers), parameters merged project over server."""
    config = project_settings(project)
    parameters = {**settings.MODEL_PARAMETERS, **config.parameters}
    if not config.models:
        return [replace(server_target(), parameters=parameters)]
    return [_target(spec, parameters) for spec in config.models]


ANY_MODEL = "*"


def allowed_names(config: ProjectSettings) -> list[str]:
    """The names beyond the project's models that its calls may ask for, served by its first model's
    endpoint: its `allowedModels`, else (a project that names neither) the server's ALLOWED_MODELS,
    so a project nobody configured offers the server's own model and no other (docs/models.md).
    `*` allows any name."""
    if config.models or config.allowed_models:
        return list(config.allowed_models)
    return list(settings.ALLOWED_MODELS)


def project_model_names(project) -> list[str]:
    """The names a run's or a gateway call's `model` may choose, the default first (`*` left out)."""
    config = project_settings(project)
    names = [t.model for t in project_targets(project)] + [n for n in allowed_names(config) if n != ANY_MODEL]
    return list(dict.fromkeys(names))


def model_chain_for(project, *, requested: str | None) -> ModelChain:
    """The models one call tries, in order, with the project's output cap (`output_cap`). Raises
    Problem 400 MODEL_NOT_ALLOWED for a `requested` name the project does not offer (`allowed_names`)."""
    config = project_settings(project)
    targets = project_targets(project)
    if requested:
        chosen = [t for t in targets if t.model == requested]
        allowed = allowed_names(config)
        if chosen:
            targets = chosen[:1] + [t for t in targets if t is not chosen[0]]
        elif requested in allowed or ANY_MODEL in allowed:
            # Another model of the first model's endpoint; the rest stay its fallbacks.
            targets = [replace(targets[0], model=requested)] + targets[1:]
        else:
            raise Problem(400, "MODEL_NOT_ALLOWED", f"The model {requested[:200]!r} is not offered by this project.",
                          allowedModels=project_model_names(project))
    return ModelChain(targets, max_output_tokens=output_cap(config))
