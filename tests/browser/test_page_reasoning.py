"""The page shows a model's reasoning folded above its answer, while it streams and after a reload,
with the project's model on the Anthropic fake thinking first."""
from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from tests.browser.test_chat_page import last_answer, panel, send
from tests.support.fake_anthropic import FakeAnthropic
from tests.support.fake_openai import Text
from tests.support.rule_replies import anthropic_reply

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def test_the_models_reasoning_is_folded_above_the_answer_and_opens_on_demand(chat, settings, tmp_path):
    with FakeAnthropic() as fake:
        fake.responder = anthropic_reply  # the thread's name and the suggestions after the answer
        path = tmp_path / "projects.yaml"
        path.write_text(f"projects:\n  - name: {json.dumps(settings.WEB_PROJECT_NAME)}\n"
                        f"    models: [{{provider: anthropic, model: claude-fake, baseUrl: '{fake.base_url}'}}]\n")
        call_command("apply_projects", str(path), stdout=io.StringIO())
        fake.script(Text(["Because of ", "Rayleigh scattering."], reasoning=["Short waves ", "scatter more."]))
        page = chat
        send(page, "Why is the sky blue?")
        expect(last_answer(page)).to_have_text("Because of Rayleigh scattering.")
        for attempt in ("streamed", "reloaded"):
            fold = panel(page).locator(".msg-assistant details.msg-reasoning")
            expect(fold).to_have_count(1)
            expect(fold.locator("summary")).to_have_text("Reasoning")
            expect(fold).not_to_have_attribute("open", "")
            expect(fold.locator(".reasoning-text")).to_be_hidden()
            fold.locator("summary").click()
            expect(fold.locator(".reasoning-text")).to_have_text("Short waves scatter more.")
            if attempt == "streamed":
                page.reload()
                page.wait_for_selector("body[data-ready=true]")
                expect(last_answer(page)).to_have_text("Because of Rayleigh scattering.")
        assert fake.requests[0].body["messages"][-1]["content"][0]["text"] == "Why is the sky blue?"
