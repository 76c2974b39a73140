"""The admin as the inspection tool, in Chromium at 1280x800 and 390x844: a thread page that reads as
the conversation, the usage page's charts, list tables that fit the desktop width. Screenshots are
saved under test-artifacts/screenshots/ (the fixture's teardown) for a person to look at."""
from __future__ import annotations

import pytest

from tests.browser.conftest import DESKTOP, PASSWORD, PHONE, password_hash, screenshot
from tests.conftest import Api

pytestmark = pytest.mark.browser

DATA_CARD = {"name": "DataCard", "description": "A card with a title and a value.",
             "propsSchema": {"type": "object", "properties": {"title": {"type": "string"},
                                                              "value": {"type": "number"}}}}


@pytest.fixture
def conversation(live_server_url, api_key, project, django_user_model):
    """A thread made through the API: a Markdown answer, a server-tool round trip, a component, a
    failed run; plus a reasoning block and a cancelled answer stored as the services store them."""
    from tests.support.sse import read_events
    from threads import services as thread_services
    from threads.models import Thread
    from tools.models import ProjectTool

    django_user_model.objects.create(username="root", password=password_hash(), is_staff=True, is_superuser=True)
    ProjectTool.objects.create(project=project, name="calculate")
    api = Api(live_server_url, api_key)

    def run(path, text, **extra):
        body = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": text}]}, **extra}
        response = api.post(path, body, stream=True)
        assert response.status_code == 200, response.text
        events = list(read_events(response))
        return response.headers.get("X-Thread-Id"), events

    thread_id, events = run("/v1/threads/runs", "Say **bold** and `code`")
    last = events[0]["runId"]
    for text, extra in (('Please calculate {"expression": "2+3"}', {}),
                        ('Show DataCard {"title": "Revenue", "value": 42}', {"availableComponents": [DATA_CARD]}),
                        ("!fail now", {})):
        _, events = run(f"/v1/threads/{thread_id}/runs", text, previousRunId=last, **extra)
        last = events[0]["runId"]
    thread = Thread.objects.get(id=thread_id)
    thread_services.message_create(thread=thread, role="assistant", content=[
        {"type": "reasoning", "text": "The user wants a summary; think it through first."},
        {"type": "text", "text": "A summary that was *cut short*"}], is_cancelled=True)
    return thread


def _admin(open_page, viewport):
    page = open_page(viewport)
    page.goto("/admin/login/")
    page.fill("#id_username", "root")
    page.fill("#id_password", PASSWORD)
    page.click("input[type=submit]")
    page.wait_for_selector("#site-name")
    return page


def _no_sideways_scroll(page) -> None:
    width = page.evaluate("document.documentElement.scrollWidth")
    assert width <= page.viewport_size["width"], f"the page is {width} px wide"


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_thread_page_reads_as_the_conversation(open_page, conversation, viewport):
    from tests.support.admin import admin_url
    from threads.models import Thread

    page = _admin(open_page, viewport)
    page.goto(admin_url(Thread, "change", conversation.id))
    # Markdown drawn by the page's renderer, not shown as source.
    page.wait_for_selector(".tambo-md strong")
    assert page.locator(".tambo-md strong").first.inner_text() == "bold"
    tool = page.locator(".tambo-tool", has_text="calculate").first
    assert '"expression": "2+3"' in tool.inner_text() and "5" in tool.locator("pre").nth(1).inner_text()
    component = page.locator(".tambo-component").first
    assert "DataCard" in component.inner_text() and '"Revenue"' in component.inner_text()
    reasoning = page.locator("details.tambo-reasoning").first
    assert reasoning.get_attribute("open") is None  # folded
    assert page.locator(".tambo-run-failed .tambo-run-end").first.inner_text().startswith("Run failed")
    assert page.locator(".tambo-cancelled .tambo-badge-cancelled").count() == 1
    facts = page.locator(".tambo-run-facts").first.inner_text()
    assert "model offline" in facts and "first token" in facts and "tokens" in facts
    assert page.locator("a", has_text="Open this thread on the page").get_attribute("href") == \
        f"/?thread={conversation.id}"
    assert page.locator("input[type=submit][name=_save]").count() == 0  # read-only
    if viewport is DESKTOP:
        _no_sideways_scroll(page)
    screenshot(page, f"admin-thread-{page.viewport_size['width']}")
    assert page.errors == []


@pytest.mark.parametrize("viewport", [DESKTOP, PHONE], ids=["desktop", "phone"])
def test_the_usage_page_draws_its_charts(open_page, conversation, viewport):
    page = _admin(open_page, viewport)
    page.goto("/admin/telemetry/usage/?period=7")
    tokens = page.locator("figure.tambo-chart", has_text="Tokens per day")
    assert tokens.locator("rect").count() >= 1  # today's bar
    assert page.locator("figure.tambo-chart", has_text="Error rate").locator("circle").count() >= 1
    assert page.locator("figure.tambo-chart", has_text="Time to first token").locator("circle").count() >= 2
    assert "4 runs" in page.locator(".tambo-usage-totals").inner_text()
    assert "1 failed" in page.locator(".tambo-usage-totals").inner_text()
    if viewport is DESKTOP:
        _no_sideways_scroll(page)
    screenshot(page, f"admin-usage-{page.viewport_size['width']}")
    assert page.errors == []


@pytest.mark.parametrize("path", ["/admin/threads/thread/", "/admin/threads/message/", "/admin/runs/run/",
                                  "/admin/telemetry/usage/"])
def test_the_list_tables_fit_1280_px(open_page, conversation, path):
    page = _admin(open_page, DESKTOP)
    page.goto(path)
    page.wait_for_selector("#result_list")
    _no_sideways_scroll(page)
    if "message" in path:
        assert "Say **bold**" in page.locator("#result_list").inner_text()  # the text preview
