"""The admin shows what tools and components left on a thread: tool messages with their results, component
blocks with their props and current state. Arranged through real runs over HTTP, read as a superuser."""
from __future__ import annotations

import html

import pytest
from django.test import Client

from tests.support.run_requests import enable_tools, last_run_id, run
from tests.support.admin import admin_url
from threads.models import Thread

pytestmark = pytest.mark.django_db(transaction=True)

CARD = {"name": "Card", "description": "A card.",
        "propsSchema": {"type": "object", "properties": {"title": {"type": "string"}}}}


def page_text(client: Client, url: str) -> str:
    response = client.get(url)
    assert response.status_code == 200, url
    return html.unescape(response.content.decode())


def test_the_message_page_shows_a_tool_result_and_a_component_with_props_and_state(api, project, admin_client):
    from threads.models import Message

    enable_tools(project, "calculate")
    thread_id, events = run(api, 'calculate {"expression": "6*7"}')
    call_id = next(e["toolCallId"] for e in events if e["type"] == "TOOL_CALL_RESULT")
    tool_message = Message.objects.get(thread_id=thread_id, role=Message.Role.TOOL)
    text = page_text(admin_client, admin_url(Message, "change", tool_message.id))
    assert f'"toolUseId": "{call_id}"' in text
    assert '"text": "42"' in text

    last = last_run_id(api, thread_id)
    _, events = run(api, 'Card {"title": "Pick a colour"}', thread_id=thread_id, previousRunId=last,
                    availableComponents=[CARD])
    start = next(e["value"] for e in events if e.get("name") == "tambo.component.start")
    response = api.post(f"/v1/threads/{thread_id}/components/{start['componentId']}/state",
                        {"userKey": "alice", "state": {"colour": "teal"}})
    assert response.status_code == 200, response.text
    text = page_text(admin_client, f"/admin/threads/message/{start['messageId']}/change/")
    assert start["componentId"] in text
    assert '"title": "Pick a colour"' in text
    assert '"colour": "teal"' in text

    # The thread page reads as the conversation: the tool call with its result, the component with
    # its props and current state.
    text = page_text(admin_client, admin_url(Thread, "change", thread_id))
    assert "Tool call <b>calculate</b>" in text
    assert "<pre>42</pre>" in text
    assert '"title": "Pick a colour"' in text
    assert '"colour": "teal"' in text
