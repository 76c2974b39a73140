"""The page's microphone: it records with Chromium's fake audio device (no permission prompt), the
recording reaches the project's transcription model (the tests' fake) and its text fills the composer.
A browser of its own, launched with the fake-media flags, so this module does not use the shared one."""
from __future__ import annotations

import os

import pytest
from playwright.sync_api import expect

from tests.browser.conftest import CHROMIUM, log_in
from tests.browser.test_chat_page import panel
from tests.conftest import require_part
from tests.support.fake_openai import FakeOpenAI, Text

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


@pytest.fixture
def recording_browser(live_server_url):
    """Chromium with a fake microphone (a tone) that needs no permission prompt."""
    require_part(os.path.exists(CHROMIUM), "apt-get install chromium")
    from playwright.sync_api import sync_playwright

    previous = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path=CHROMIUM, headless=True,
                args=["--no-sandbox", "--disable-gpu", "--use-fake-device-for-media-stream",
                      "--use-fake-ui-for-media-stream"])
            context = browser.new_context(base_url=live_server_url, permissions=["microphone"])
            yield context.new_page()
            browser.close()
    finally:
        if previous is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = previous


def test_the_microphone_fills_the_composer_with_the_transcription(recording_browser, web_user, settings):
    from projects.config import ProjectSettings, TranscriptionSpec, project_settings_save
    from projects.models import Project

    with FakeOpenAI() as fake:
        demo, _ = Project.objects.get_or_create(name=settings.WEB_PROJECT_NAME)
        project_settings_save(demo, ProjectSettings(transcription=TranscriptionSpec(
            model="whisper-1", base_url=fake.base_url, api_key="sk-page")))
        fake.script(Text("show me the orders"))
        page = recording_browser
        log_in(page)
        mic = panel(page).locator("[data-role=mic]")
        expect(mic).to_be_visible()
        mic.click()
        expect(mic).to_have_attribute("data-state", "recording")
        # Some audio must be recorded before the stop: wait for the recorder's first chunk of data.
        page.wait_for_function("() => Number(document.querySelector('[data-role=mic]').dataset.recordedBytes) > 0")
        mic.click()
        expect(panel(page).locator("[data-role=input]")).to_have_value("show me the orders")
        [seen] = fake.requests
        upload = seen.body["file"]
        assert upload["contentType"].startswith("audio/webm") and upload["filename"] == "recording.webm"
        assert upload["data"][:4] == b"\x1a\x45\xdf\xa3"  # a WebM (EBML) file
        assert seen.api_key == "sk-page"


def test_without_a_transcription_model_the_microphone_says_how_to_add_one(chat):
    mic = panel(chat).locator("[data-role=mic]")
    expect(mic).to_be_visible()
    expect(mic).to_have_attribute("data-state", "unavailable")
    assert "transcription model" in mic.get_attribute("title") and "apply_projects" in mic.get_attribute("title")
    mic.click()
    expect(panel(chat).locator(".msg-notice")).to_contain_text("Voice input is off")
