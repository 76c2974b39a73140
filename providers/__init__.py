"""Model providers, one module each, chosen per call by the endpoint a project's model names (the
pattern of django.contrib.sessions.backends). The server's environment (`MODEL_PROVIDER`,
`OPENAI_*`, `ANTHROPIC_*`) is the default endpoint of projects that configure no models."""
from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from core.runtime import process_runtime
from providers.base import Endpoint, Provider
from providers.deadline import Deadlines

PROVIDERS = ("openai", "anthropic", "offline", "agent")


def default_endpoint(name: str | None = None) -> Endpoint:
    """The server-wide endpoint of a provider, from the environment."""
    name = name or settings.MODEL_PROVIDER
    if name == "openai":
        return Endpoint("openai", settings.OPENAI_BASE_URL, settings.OPENAI_API_KEY or None,
                        settings.OPENAI_TIMEOUT)
    if name == "anthropic":
        return Endpoint("anthropic", settings.ANTHROPIC_BASE_URL, settings.ANTHROPIC_API_KEY or None,
                        settings.OPENAI_TIMEOUT)
    return Endpoint(name)


def model_deadlines() -> Deadlines:
    """How long a vendor call may take in total (providers/deadline.py), from the environment."""
    return Deadlines(call=settings.MODEL_CALL_DEADLINE, idle=settings.MODEL_IDLE_SECONDS,
                     stream=settings.MODEL_STREAM_DEADLINE)


def get_provider(name: str | None = None) -> Provider:
    """The provider of the server-wide default endpoint (of `name`, else MODEL_PROVIDER)."""
    return provider_for(default_endpoint(name))


async def providers_close() -> None:
    """Closes the model clients the providers opened on the running loop (at the process's shutdown)."""
    for provider in _made:
        aclose = getattr(provider, "aclose", None)
        if aclose is not None:
            await aclose()


_made: list[Provider] = []


def provider_for(endpoint: Endpoint) -> Provider:
    """One provider per (process, endpoint): its client keeps the endpoint's pooled connections."""
    provider = _provider_for(endpoint)
    if provider not in _made:
        _made.append(provider)
    return provider


@lru_cache(maxsize=64)
def _provider_for(endpoint: Endpoint) -> Provider:
    # Only the chosen provider's module is imported: the vendor SDKs are slow imports that an
    # offline server never needs.
    if endpoint.provider == "offline":
        from providers.offline import OfflineProvider

        return OfflineProvider(delay=settings.OFFLINE_MODEL_DELAY)
    if endpoint.provider == "openai":
        from providers.openai_provider import OpenAIProvider

        return OpenAIProvider(api_key=endpoint.api_key or "not-needed", base_url=endpoint.base_url,
                              default_model=settings.OPENAI_MODEL, timeout=endpoint.timeout,
                              deadlines=model_deadlines())
    if endpoint.provider == "anthropic":
        from providers.anthropic_provider import AnthropicProvider

        return AnthropicProvider(api_key=endpoint.api_key or "not-needed", base_url=endpoint.base_url,
                                 default_model=settings.ANTHROPIC_MODEL, timeout=endpoint.timeout,
                                 deadlines=model_deadlines())
    if endpoint.provider == "agent":
        from providers.agent_provider import AgentProvider

        return AgentProvider(url=endpoint.base_url or "", headers=dict(endpoint.headers), timeout=endpoint.timeout)
    raise ValueError(f"Unknown model provider {endpoint.provider!r}")


def reset_providers() -> None:
    """Forgets the providers made (for tests that change provider settings, and when the process
    runtime stops, once their clients are closed: core/runtime.py)."""
    _provider_for.cache_clear()
    _made.clear()


process_runtime.cache_register("model providers", reset_providers)
