"""Model providers, chosen by settings (the pattern of django.contrib.sessions.backends)."""
from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from providers.base import Provider


def get_provider(name: str | None = None) -> Provider:
    return _provider(name or settings.MODEL_PROVIDER)


async def providers_close() -> None:
    """Closes the model clients the providers opened on the running loop (at the process's shutdown)."""
    for provider in _made:
        aclose = getattr(provider, "aclose", None)
        if aclose is not None:
            await aclose()


_made: list[Provider] = []


def _provider(name: str) -> Provider:
    provider = _cached_provider(name)
    if provider not in _made:
        _made.append(provider)
    return provider


@lru_cache(maxsize=8)
def _cached_provider(name: str) -> Provider:
    # Only the chosen provider's module is imported: the openai SDK is a slow import that an
    # offline server never needs.
    if name == "offline":
        from providers.offline import OfflineProvider

        return OfflineProvider(delay=settings.OFFLINE_MODEL_DELAY)
    if name == "openai":
        from providers.openai_provider import OpenAIProvider

        return OpenAIProvider(api_key=settings.OPENAI_API_KEY or "not-needed", base_url=settings.OPENAI_BASE_URL,
                              default_model=settings.OPENAI_MODEL, timeout=settings.OPENAI_TIMEOUT)
    raise ValueError(f"Unknown model provider {name!r}")


def reset_providers() -> None:
    """For tests that change provider settings."""
    _cached_provider.cache_clear()
    _made.clear()
