"""Django's stock middleware runs on the event loop for an async request (tambo_project/inline_middleware.py)
through public parts only: Django's private async dispatch (`MiddlewareMixin.__acall__`), which
runs every hook on a thread, is never entered for them, and their answers are Django's own."""
from __future__ import annotations

import asyncio

import pytest
from django.test import AsyncClient, Client
from django.utils.deprecation import MiddlewareMixin

from tambo_project import inline_middleware

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def private_dispatches(monkeypatch) -> list[str]:
    """The names of the inline middleware whose `__acall__` Django entered."""
    entered: list[str] = []
    real = MiddlewareMixin.__acall__

    async def counting(self, request):
        if isinstance(self, inline_middleware._Inline):
            entered.append(type(self).__name__)
        return await real(self, request)

    monkeypatch.setattr(MiddlewareMixin, "__acall__", counting)
    return entered


def test_an_async_request_passes_the_stock_middleware_without_their_private_dispatch(private_dispatches):
    response = asyncio.run(AsyncClient().get("/v1/threads", {"userKey": "alice"}))

    assert response.status_code == 401  # the request went through every middleware to the view
    assert private_dispatches == []
    # What the stock middleware add is still added (SecurityMiddleware, XFrameOptionsMiddleware).
    assert response["X-Content-Type-Options"] == "nosniff"
    assert response["X-Frame-Options"] == "DENY"


def test_a_sync_request_takes_djangos_own_path_with_the_same_headers(private_dispatches):
    response = Client().get("/v1/threads", {"userKey": "alice"})

    assert response.status_code == 401
    assert response["X-Content-Type-Options"] == "nosniff" and response["X-Frame-Options"] == "DENY"


@pytest.mark.parametrize("name", ["SecurityMiddleware", "SessionMiddleware", "CommonMiddleware", "CsrfViewMiddleware",
                                  "AuthenticationMiddleware", "MessageMiddleware", "XFrameOptionsMiddleware"])
def test_no_inline_middleware_overrides_djangos_private_dispatch(name):
    ours = [cls for cls in getattr(inline_middleware, name).__mro__ if cls.__module__ == inline_middleware.__name__]
    assert ours and all("__acall__" not in vars(cls) for cls in ours)
