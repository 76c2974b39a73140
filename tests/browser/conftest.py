"""Fixtures for the browser tests: Debian's Chromium driven by Playwright, a logged-in page.

Every test's page is saved as a screenshot under test-artifacts/screenshots/ when the test ends.
"""
from __future__ import annotations

import functools
import os
import re
import time
from pathlib import Path
from typing import Callable, Iterator

import pytest

from tests.conftest import require_part


CHROMIUM = "/usr/bin/chromium"
SCREENSHOTS = Path(__file__).resolve().parents[2] / "test-artifacts" / "screenshots"
PASSWORD = "correct horse battery"
DESKTOP = {"width": 1280, "height": 800}
PHONE = {"width": 390, "height": 844}


@pytest.fixture(scope="module")
def chromium() -> Iterator[object]:
    """One browser per module. Playwright's sync API runs an asyncio loop in this thread while it is
    open, so it must be closed before other modules' tests call asyncio.run()."""
    require_part(os.path.exists(CHROMIUM), "apt-get install chromium")
    from playwright.sync_api import expect, sync_playwright

    expect.set_options(timeout=15_000)
    # While that loop runs, Django would take the tests' own (plain, synchronous) ORM checks for
    # async code; its guard is lifted for the browser tests only.
    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                args=["--no-sandbox", "--disable-gpu", "--disable-background-networking"])
            yield browser
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


@functools.cache
def password_hash() -> str:
    """PASSWORD hashed once per test run: a hash costs 0.4 s of CPU (PBKDF2), and every browser test makes a
    login. The login itself still checks the password through the server's own hasher."""
    from django.contrib.auth.hashers import make_password

    return make_password(PASSWORD)


@pytest.fixture
def web_user(transactional_db, django_user_model):
    return django_user_model.objects.create(username="ada", password=password_hash())


def screenshot(page, name: str) -> Path:
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    path = SCREENSHOTS / f"{re.sub(r'[^A-Za-z0-9_.-]+', '_', name)}.png"
    page.screenshot(path=str(path), full_page=False)
    return path


@pytest.fixture
def open_page(chromium, live_server_url, request) -> Iterator[Callable]:
    """open_page(viewport=DESKTOP) → a fresh browser page; its screenshot is saved at teardown."""
    contexts = []
    pages = []

    def open_(viewport: dict = DESKTOP):
        context = chromium.new_context(viewport=viewport, base_url=live_server_url)
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.errors = []  # uncaught page errors, to assert none happened
        page.on("pageerror", lambda error: page.errors.append(str(error)))
        pages.append(page)
        return page

    yield open_
    for index, page in enumerate(pages):
        try:
            screenshot(page, request.node.name + (f"-{index}" if index else ""))
        except Exception:  # noqa: BLE001 - a closed page has nothing to show
            pass
    for context in contexts:
        context.close()


def log_in(page, username: str = "ada", password: str = PASSWORD) -> None:
    page.goto("/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_selector("body[data-ready=true]")


@pytest.fixture
def chat(open_page, web_user):
    """A desktop page, logged in through the login form, on the chat page."""
    page = open_page()
    log_in(page)
    return page


def wait_until(condition: Callable[[], object], timeout: float = 15.0, what: str = "condition"):
    """Polls `condition` (e.g. a database check) until it returns something truthy."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"Timed out waiting for {what}")
        time.sleep(0.05)
