"""No page of ours needs the internet: the chat page, the admin and the API reference (/v1/docs)
request nothing outside this server, and nothing they request is missing (a favicon included);
a thread the page cannot open says it may be another user's."""
from __future__ import annotations

import pytest

from tests.browser.conftest import PASSWORD, log_in

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def watch(page, base_url: str) -> tuple[list[str], list[str]]:
    """(requests outside the server, answers 404 or worse); favicons are asked for by the browser itself."""
    outside: list[str] = []
    failed: list[str] = []
    page.on("request", lambda r: outside.append(r.url)
            if not r.url.startswith((base_url, "data:", "blob:", "about:")) else None)
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    return outside, failed


def favicon_of(page) -> int:
    """What /favicon.ico answers (Chromium's own favicon request is not always in the log)."""
    return page.request.get("/favicon.ico").status


def test_the_chat_page_the_admin_and_the_api_reference_request_nothing_outside(open_page, web_user,
                                                                              live_server_url, django_user_model):
    django_user_model.objects.create_superuser("root", password=PASSWORD)
    page = open_page()
    outside, failed = watch(page, live_server_url)

    log_in(page)
    page.goto("/v1/docs")
    page.wait_for_selector("redoc, .redoc-wrap, [class*=redoc]", state="attached")
    page.wait_for_load_state("networkidle")
    page.context.clear_cookies()
    page.goto("/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    page.goto("/admin/threads/thread/")
    page.wait_for_load_state("networkidle")

    assert outside == []
    assert failed == []
    assert favicon_of(page) == 200


def test_a_thread_of_another_user_says_it_may_belong_to_another_user(chat, settings):
    from projects.models import Project
    from threads import services

    project, _ = Project.objects.get_or_create(name=settings.WEB_PROJECT_NAME)
    cli_thread = services.thread_create(project=project, user_key="cli-user", name="From the CLI")
    chat.goto(f"/?thread={cli_thread.id}")
    chat.wait_for_selector("body[data-ready=true]")
    notice = chat.locator("#panel-threads .msg-notice")
    from playwright.sync_api import expect

    expect(notice).to_contain_text("belongs to another user")
    expect(notice).to_contain_text("userKey")
