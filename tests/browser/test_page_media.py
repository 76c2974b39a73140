"""The page's images: a pasted, dropped or picked image reaches the model (the offline model says what
it received) and shows in the composer and the transcript. The microphone is tests/browser/test_page_voice.py."""
from __future__ import annotations

import base64

import pytest
from playwright.sync_api import expect

from tests.browser.test_chat_page import last_answer, panel, send, state, the_thread
from tests.support.images import png

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]

PICTURE = png(40, 30, seed=3)

# A File built in the page from the test's bytes, handed to a paste or drop event as a real browser would.
_WITH_FILE = """([kind, b64, name]) => {
    const bytes = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
    const data = new DataTransfer();
    data.items.add(new File([bytes], name, {type: "image/png"}));
    const panel = document.querySelector("#panel-threads");
    if (kind === "paste") {
        panel.querySelector("[data-role=input]").dispatchEvent(
            new ClipboardEvent("paste", {clipboardData: data, bubbles: true, cancelable: true}));
    } else {
        const form = panel.querySelector("[data-role=composer]");
        form.dispatchEvent(new DragEvent("dragover", {dataTransfer: data, bubbles: true, cancelable: true}));
        form.dispatchEvent(new DragEvent("drop", {dataTransfer: data, bubbles: true, cancelable: true}));
    }
}"""


def _stored_image(user) -> dict:
    message = the_thread(user).messages.filter(role="user").order_by("created_at").first()
    return next(b["resource"] for b in message.content if b["type"] == "resource")


@pytest.mark.parametrize("kind", ["paste", "drop"])
def test_a_pasted_or_dropped_image_reaches_the_model_and_shows_in_the_transcript(chat, web_user, kind):
    chat.evaluate(_WITH_FILE, [kind, base64.b64encode(PICTURE).decode(), "shot.png"])
    tray = panel(chat).locator("[data-role=attachments] img")
    expect(tray).to_have_count(1)
    expect(tray).to_have_attribute("alt", "shot.png")
    send(chat, "What is this?")
    expect(state(chat)).to_have_text("completed")
    expect(last_answer(chat)).to_contain_text(f"I received: image shot.png (image/png, {len(PICTURE)} bytes)")
    expect(panel(chat).locator("[data-role=attachments]")).to_be_hidden()  # the tray is empty again
    assert base64.b64decode(_stored_image(web_user)["blob"]) == PICTURE
    expect(panel(chat).locator(".msg-user .block-image img")).to_have_count(1)

    chat.reload()
    chat.wait_for_selector("body[data-ready=true]")
    shown = panel(chat).locator(".msg-user .block-image img")
    expect(shown).to_have_attribute("alt", "shot.png")
    assert chat.evaluate("(img) => img.complete && img.naturalWidth", shown.element_handle()) == 40


def test_a_picked_image_is_sent_without_text_and_can_be_removed_before(chat, web_user, tmp_path):
    first, second = tmp_path / "one.png", tmp_path / "two.png"
    first.write_bytes(PICTURE)
    second.write_bytes(png(8, 8, seed=4))
    panel(chat).locator("[data-role=file-input]").set_input_files([str(first), str(second)])
    expect(panel(chat).locator("[data-role=attachments] img")).to_have_count(2)
    panel(chat).get_by_role("button", name="Remove two.png").click()
    expect(panel(chat).locator("[data-role=attachments] img")).to_have_count(1)
    panel(chat).locator("[data-role=input]").press("Enter")
    expect(state(chat)).to_have_text("completed")
    expect(last_answer(chat)).to_contain_text(f"image one.png (image/png, {len(PICTURE)} bytes)")
    assert _stored_image(web_user)["name"] == "one.png"


def test_a_file_that_is_not_an_image_is_refused_in_the_page(chat, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("hello")
    panel(chat).locator("[data-role=file-input]").set_input_files(str(notes))
    expect(panel(chat).locator(".msg-notice")).to_contain_text("not a PNG, JPEG, GIF or WebP image")
    expect(panel(chat).locator("[data-role=attachments]")).to_be_hidden()


def test_the_microphone_is_switched_off_without_a_transcription_model(chat):
    # Shown, saying how to add a model (tests/browser/test_page_voice.py), and only on the threads tab.
    expect(panel(chat).locator("[data-role=attach]")).to_be_visible()
    expect(panel(chat).locator("[data-role=mic]")).to_have_attribute("data-state", "unavailable")
    expect(panel(chat, "completions").locator("[data-role=mic]")).to_have_count(0)
