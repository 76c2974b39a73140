"""Model providers, chosen by settings (the pattern of django.contrib.sessions.backends)."""
from __future__ import annotations

from functools import lru_cache

from django.conf import settings

from providers.base import Provider


def get_provider(name: str | None = None) -> Provider:
    return _provider(name or settings.MODEL_PROVIDER)


@lru_cache(maxsize=8)
def _provider(name: str) -> Provider:
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
    _provider.cache_clear()
