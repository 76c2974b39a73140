"""The chat page in a real browser: log in, stream, browser tools, components, stop, errors, XSS,
the chat-completions tab and the phone layout. Checks what a person sees, and the server's records."""
from __future__ import annotations


import pytest
from playwright.sync_api import expect

from tests.browser.conftest import PHONE, log_in, screenshot, wait_until

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.browser]


def panel(page, name: str = "threads"):
    return page.locator(f"#panel-{name}")


def send(page, text: str, name: str = "threads") -> None:
    """Types and presses Enter, once the panel takes a message (its Send button is enabled)."""
    expect(panel(page, name).locator("[data-role=send]")).to_be_enabled()
    box = panel(page, name).locator("[data-role=input]")
    box.fill(text)
    box.press("Enter")


def state(page, name: str = "threads"):
    return panel(page, name).locator("[data-role=state]")


def record_states(page, name: str = "threads") -> None:
    """Remembers every status the panel shows, so a test can tell that it streamed."""
    page.evaluate("""(name) => {
        window.seenStates = [];
        const badge = document.querySelector(`#panel-${name} [data-role=state]`);
        new MutationObserver(() => window.seenStates.push(badge.dataset.state))
            .observe(badge, {attributes: true, attributeFilter: ["data-state"]});
    }""", name)


def last_answer(page, name: str = "threads"):
    return panel(page, name).locator(".msg-assistant .block-text").last


def the_thread(user):
    from projects.identities import login_user
    from threads.models import Thread

    return Thread.objects.get(user_key=login_user(user.pk))


def test_an_anonymous_visitor_is_sent_to_the_login_page(open_page):
    page = open_page()
    page.goto("/")
    expect(page).to_have_url("/login/?next=/")
    expect(page.locator("#id_username")).to_be_visible()


def test_a_wrong_password_shows_an_error_and_no_chat(open_page, web_user):
    page = open_page()
    log_in_attempt = page.goto("/login/")
    assert log_in_attempt.ok
    page.fill("#id_username", "ada")
    page.fill("#id_password", "not the password")
    page.click("button[type=submit]")
    expect(page.locator(".form-error")).to_contain_text("did not match")
    expect(page.locator("#panel-threads")).to_have_count(0)


def test_it_logs_in_and_streams_a_reply_into_a_new_thread(chat, web_user):
    html = chat.content()
    assert "tk_" not in html and "x-api-key" not in html.lower()
    record_states(chat)

    send(chat, "hello there")

    expect(state(chat)).to_have_text("completed")
    expect(last_answer(chat)).to_contain_text("(offline model) You said: hello there")
    seen = chat.evaluate("window.seenStates")
    assert "requesting" in seen and "streaming" in seen
    thread = the_thread(web_user)
    # The page names a new thread after its first message (PATCH with the session and CSRF token).
    expect(chat.locator(f"[data-thread-id={thread.id}]")).to_contain_text("hello there")
    thread.refresh_from_db()
    assert thread.name == "hello there"
    assert chat.errors == []


def test_a_second_message_continues_the_thread_and_reopening_shows_history(chat, web_user):
    send(chat, "first message")
    expect(state(chat)).to_have_text("completed")
    send(chat, "second message")
    expect(last_answer(chat)).to_contain_text("You said: second message")
    expect(state(chat)).to_have_text("completed")
    thread = the_thread(web_user)
    assert thread.runs.count() == 2

    chat.click("#new-thread")
    expect(panel(chat).locator(".msg")).to_have_count(1)  # the empty-thread hint
    chat.click(f"[data-thread-id={thread.id}]")

    expect(panel(chat).locator(".msg-user")).to_have_count(2)
    expect(last_answer(chat)).to_contain_text("You said: second message")


def test_the_table_tool_runs_in_the_page_and_the_answer_quotes_the_selected_row(chat, web_user):
    chat.click("#demo-table tr[data-row-id=ord-1003]")

    send(chat, "Which order did I pick? read_selected_row")

    expect(state(chat)).to_have_text("completed")
    card = panel(chat).locator(".tool-card[data-tool-name=read_selected_row]")
    expect(card).to_have_attribute("data-status", "done")
    card.locator("summary").click()
    expect(card.locator(".tool-result")).to_contain_text("Alan Turing")
    expect(last_answer(chat)).to_contain_text('Tool read_selected_row returned: {"id":"ord-1003","customer":"Alan Turing"')
    from threads.models import Message

    results = [m.content[0] for m in Message.objects.filter(thread=the_thread(web_user), role="tool")]
    assert results[0]["type"] == "tool_result" and "Alan Turing" in results[0]["content"][0]["text"]
    assert the_thread(web_user).runs.count() == 2  # the paused run and its continuation


def test_the_local_storage_and_confirmation_tools_run_in_the_page(chat):
    send(chat, 'local_storage {"action": "set", "key": "color", "value": "teal"}')
    expect(state(chat)).to_have_text("completed")
    assert chat.evaluate("localStorage.getItem('tambo-demo:color')") == "teal"
    expect(chat.locator("#storage-values")).to_contain_text("color = teal")

    send(chat, 'ask_confirmation {"question": "Ship the order?"}')
    dialog = chat.locator("#confirm-dialog")
    expect(dialog).to_be_visible()
    expect(dialog).to_contain_text("Ship the order?")
    expect(state(chat)).to_have_text("calling tools…")
    dialog.locator("button[value=yes]").click()

    expect(state(chat)).to_have_text("completed")
    expect(last_answer(chat)).to_contain_text('"confirmed":true')


def test_a_component_renders_and_a_state_change_reaches_the_server(chat, web_user):
    send(chat, 'Show a DataCard {"title": "Signups", "value": 42, "unit": "people"}')

    expect(state(chat)).to_have_text("completed")
    card = panel(chat).locator(".component-card[data-component-name=DataCard]")
    expect(card).to_contain_text("Signups")
    expect(card.locator(".c-value")).to_have_text("42")
    card.locator("button.c-action").click()
    expect(card.locator(".component-note")).to_have_text("Saved.")
    expect(card.locator("button.c-action")).to_have_attribute("aria-pressed", "true")

    from threads.models import Message

    component_id = card.get_attribute("data-component-id")
    message = next(m for m in Message.objects.filter(thread=the_thread(web_user), role="assistant")
                   if any(b.get("id") == component_id for b in m.content))
    assert message.component_state[component_id] == {"pinned": True}


def test_a_chart_gets_its_schema_defaults_and_highlighting_a_bar_is_saved(chat, web_user):
    send(chat, "Draw a BarChart")

    expect(state(chat)).to_have_text("completed")
    chart = panel(chat).locator(".component-card[data-component-name=BarChart]")
    expect(chart.locator(".c-bar")).to_have_count(5)
    chart.locator(".c-bar[data-label=Thu]").click()
    expect(chart.locator(".component-note")).to_have_text("Saved.")

    from threads.models import Message

    component_id = chart.get_attribute("data-component-id")
    states = [m.component_state.get(component_id) for m in Message.objects.filter(thread=the_thread(web_user))]
    assert {"highlighted": "Thu"} in states


def test_stop_cancels_the_run_at_once(chat, web_user):
    send(chat, "!slow please")
    expect(last_answer(chat)).to_contain_text("A slow answer")
    expect(state(chat)).to_have_text("streaming…")

    with chat.expect_response(lambda r: r.request.method == "DELETE") as deleted:
        panel(chat).locator("[data-role=stop]").click()

    assert deleted.value.status == 200 and deleted.value.json()["status"] == "cancelled"
    expect(state(chat)).to_have_text("cancelled")
    expect(panel(chat).locator(".msg-assistant.is-cancelled .msg-badge")).to_have_text("cancelled")
    expect(panel(chat).locator("[data-role=stop]")).to_be_hidden()
    thread = wait_until(lambda: (t := the_thread(web_user)).run_status == "idle" and t, what="an idle thread")
    assert thread.last_run_cancelled is True
    from threads.models import Message

    assistant = Message.objects.get(thread=thread, role="assistant")
    assert assistant.is_cancelled
    assert "word199" not in assistant.content[0]["text"]


def test_escape_stops_and_shift_enter_makes_a_new_line(chat, web_user):
    box = panel(chat).locator("[data-role=input]")
    box.fill("!slow")
    box.press("Shift+Enter")
    box.type("second line")
    assert box.input_value() == "!slow\nsecond line"
    box.press("Enter")
    expect(state(chat)).to_have_text("streaming…")

    chat.keyboard.press("Escape")

    expect(state(chat)).to_have_text("cancelled")
    wait_until(lambda: the_thread(web_user).last_run_cancelled, what="a cancelled run")
    from threads.models import Message

    user_message = Message.objects.get(thread=the_thread(web_user), role="user")
    assert user_message.content[0]["text"] == "!slow\nsecond line"


def test_a_failing_model_shows_the_error_in_place_and_retry_runs_again(chat, web_user):
    send(chat, "!fail now")

    error = panel(chat).locator(".msg-error")
    expect(error).to_contain_text("The model provider failed")
    expect(error.locator(".error-code")).to_have_text("LLM_SERVER_ERROR")
    expect(state(chat)).to_have_text("error")
    assert the_thread(web_user).runs.count() == 1

    error.locator("button.retry").click()

    wait_until(lambda: the_thread(web_user).runs.count() == 2, what="a second run")
    expect(panel(chat).locator(".msg-error .error-code")).to_have_text("LLM_SERVER_ERROR")
    assert the_thread(web_user).last_run_error["code"] == "LLM_SERVER_ERROR"


def test_retry_after_a_network_failure_completes_the_turn(chat, web_user):
    failures = []

    def fail_once(route):
        if not failures:
            failures.append(route.request.url)
            route.abort("connectionreset")
        else:
            route.continue_()

    chat.route("**/v1/threads/runs", fail_once)
    send(chat, "are you there?")
    error = panel(chat).locator(".msg-error")
    expect(error.locator(".error-code")).to_have_text("NETWORK_ERROR")

    error.locator("button.retry").click()

    expect(state(chat)).to_have_text("completed")
    expect(last_answer(chat)).to_contain_text("You said: are you there?")
    expect(panel(chat).locator(".msg-error")).to_have_count(0)
    assert len(failures) == 1


def test_model_output_with_html_is_shown_as_text_and_never_runs(chat):
    payload = '<script>window.pwned=1</script><img src=x onerror="window.pwned=2"><b>bold</b>'

    send(chat, payload)

    expect(state(chat)).to_have_text("completed")
    expect(last_answer(chat)).to_contain_text("You said: " + payload)
    assert chat.evaluate("typeof window.pwned") == "undefined"
    messages = panel(chat).locator(".messages")
    expect(messages.locator("script, img, b")).to_have_count(0)


def test_a_session_request_without_the_csrf_token_is_refused(chat):
    answers = chat.evaluate("""async () => {
        const post = (path, body) => fetch(path, {method: "POST", headers: {"Content-Type": "application/json"},
                                                  body: JSON.stringify(body)});
        const drf = await post("/v1/threads", {});
        const run = await post("/v1/threads/runs", {message: {role: "user", content: [{type: "text", text: "hi"}]}});
        const list = await fetch("/v1/threads");
        return [drf.status, (await drf.json()).code, run.status, (await run.json()).code, list.status];
    }""")
    assert answers == [403, "CSRF_FAILED", 403, "CSRF_FAILED", 200]


def test_the_chat_completions_tab_completes_a_turn_with_a_browser_tool(chat):
    chat.click("#demo-table tr[data-row-id=ord-1002]")
    chat.click("#tab-completions")
    expect(panel(chat, "completions")).to_be_visible()
    record_states(chat, "completions")

    send(chat, "read_selected_row", name="completions")

    expect(state(chat, "completions")).to_have_text("completed")
    card = panel(chat, "completions").locator(".tool-card[data-tool-name=read_selected_row]")
    expect(card).to_have_attribute("data-status", "done")
    expect(last_answer(chat, "completions")).to_contain_text("Ada Lovelace")
    assert "calling-tools" in chat.evaluate("window.seenStates")
    # The conversation the engine holds: user, assistant tool call, tool result, assistant answer.
    roles = chat.evaluate("window.tamboPage.completions.engine.messages.map(m => m.role)")
    assert roles == ["user", "assistant", "tool", "assistant"]


def test_at_phone_width_the_composer_is_visible_and_the_drawers_open(open_page, web_user):
    page = open_page(PHONE)
    log_in(page)

    composer = panel(page).locator("[data-role=composer]")
    expect(composer).to_be_in_viewport()
    box = composer.bounding_box()
    assert box["y"] + box["height"] <= PHONE["height"] and box["width"] <= PHONE["width"]
    expect(page.locator("#sidebar")).to_be_hidden()
    send(page, "hi from a phone")
    expect(last_answer(page)).to_contain_text("You said: hi from a phone")
    expect(composer).to_be_in_viewport()
    assert page.evaluate("document.documentElement.scrollWidth") <= PHONE["width"]
    screenshot(page, "phone-chat")

    page.click("#toggle-workbench")
    expect(page.locator("#demo-table")).to_be_visible()
    screenshot(page, "phone-demo-data-drawer")
    page.keyboard.press("Escape")
    page.click("#toggle-sidebar")
    expect(page.locator("#sidebar .thread-item")).to_have_count(1)
