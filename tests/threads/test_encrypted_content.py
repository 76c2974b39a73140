"""Content encrypted at rest (threads/sealing.py, docs/projects.md#content-encrypted-at-rest): with a
project's `encryptContent` on, no table holds the plaintext of a message, a tool call's arguments, a
tool result, a component's state or an upload, while the API, the event log's replay, the admin and
the model (the fake vendor) get plaintext; rotation re-encrypts in batches, MCP vault included."""
from __future__ import annotations

import base64
import io
import json
import time
from datetime import timedelta

import pytest
import requests
from cryptography.fernet import Fernet
from django.contrib.auth.models import User
from django.core.management import call_command
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from projects.config import ProjectSettings, project_settings_save
from projects.secrets import secret_resolve, secret_store
from runs.models import Run, RunEvent
from runs.recovery.leases import expired_lease_sweep
from tests.retention.user_rows import user_row_counts
from tests.support.fake_openai import Text, ToolCall, ToolCalls
from tests.support.fixtures_openai import Vendor, fake, vendor  # noqa: F401 - fixtures
from tests.support.images import image_part, png
from tests.support.live import openai_live_server
from tests.support.sse import read_events
from threads import services
from threads.models import Message, RunStatus, Thread
from threads.sealing import seal_text
from tools.models import McpServer, McpToken

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.both_dbs]

# The live server and this process share the keyring, as the processes of one deployment do.
OLD_KEY = Fernet.generate_key().decode()
NEW_KEY = Fernet.generate_key().decode()
SECRETS = ("SECRET-USER-TEXT", "SECRET-TOOL-ARG", "SECRET-TOOL-RESULT", "SECRET-ANSWER", "SECRET-PROPS",
           "SECRET-STATE")
COMPONENT = {"name": "Card", "description": "a card", "propsSchema": {"type": "object", "properties": {
    "title": {"type": "string"}}}}
WEATHER_TOOL = {"name": "get_weather", "description": "Weather for a city.",
                "inputSchema": {"type": "object", "properties": {"city": {"type": "string"}}}}
IMAGE = png(6, 6, seed=39)


@pytest.fixture(autouse=True)
def keyring(settings):
    settings.SECRETS_KEYS = [OLD_KEY]


@pytest.fixture(scope="module")
def server(vendor, django_db_setup, django_db_blocker):
    with openai_live_server("encrypt", vendor.base_url, "sk-test", OPENAI_MODEL="fake", SECRETS_KEYS=OLD_KEY) as live:
        yield live


def encrypting(project) -> None:
    project_settings_save(project, ProjectSettings(encrypt_content=True))


def raw_rows() -> str:
    """Every row of every table, read with plain SQL, as one text."""
    out = []
    with connection.cursor() as cursor:
        for table in connection.introspection.table_names():
            cursor.execute(f'SELECT * FROM "{table}"')
            out.extend(repr(row) for row in cursor.fetchall())
    return "\n".join(out)


def post_run(server, api_key: str, body: dict, thread_id: str | None = None) -> requests.Response:
    path = f"/v1/threads/{thread_id}/runs" if thread_id else "/v1/threads/runs"
    response = requests.post(server.url + path, json={"userKey": "alice", **body}, stream=True, timeout=60,
                             headers={"x-api-key": api_key})
    assert response.status_code == 200, response.text
    response.events = read_events(response)
    return response


def wait_logged(thread_id: str) -> None:
    """Until the server's event-log writer has written the final event of every run of the thread."""
    runs = Run.objects.filter(thread_id=thread_id)
    deadline = time.monotonic() + 10
    while RunEvent.objects.filter(run_id__in=runs.values("id"), final=True).count() < runs.count():
        assert time.monotonic() < deadline, "the event log never got the runs' final events"
        time.sleep(0.05)


def conversation(server, api_key: str, fake: Vendor) -> tuple[str, str]:
    """A thread with an upload, a client tool call and its result, a component and its state, and an
    answer: (thread id, the last run's id)."""
    fake.script(ToolCalls([ToolCall("get_weather", ['{"city": "SECRET-TOOL-ARG"}'], id="call_w")]),
                ToolCalls([ToolCall("show_component_Card", ['{"title": "SECRET-PROPS"}'], id="call_c")]),
                Text("SECRET-ANSWER"))
    first = post_run(server, api_key, {"tools": [WEATHER_TOOL], "message": {"role": "user", "content": [
        {"type": "text", "text": "SECRET-USER-TEXT"}, image_part(IMAGE)]}})
    thread_id = first.headers["X-Thread-Id"]
    second = post_run(server, api_key, {
        "tools": [WEATHER_TOOL], "availableComponents": [COMPONENT], "previousRunId": first.headers["X-Run-Id"],
        "message": {"role": "user", "content": [{"type": "tool_result", "toolUseId": "call_w",
                                                 "content": [{"type": "text", "text": "SECRET-TOOL-RESULT"}]}]}},
        thread_id)
    component_id = next(e for e in second.events if e.get("name") == "tambo.component.start")["value"]["componentId"]
    state = requests.post(f"{server.url}/v1/threads/{thread_id}/components/{component_id}/state", timeout=30,
                          headers={"x-api-key": api_key}, json={"userKey": "alice", "state": {"note": "SECRET-STATE"}})
    assert state.status_code == 200, state.text
    wait_logged(thread_id)
    return thread_id, second.headers["X-Run-Id"]


def staff_session(base_url: str) -> requests.Session:
    User.objects.create_user("operator", password="pw-operator-1", is_staff=True, is_superuser=True)
    session = requests.Session()
    login = "/admin/login/?next=/admin/"
    session.get(base_url + login, timeout=30)
    response = session.post(base_url + login, timeout=30, allow_redirects=False,
                            data={"username": "operator", "password": "pw-operator-1",
                                  "csrfmiddlewaretoken": session.cookies["csrftoken"]})
    assert response.status_code == 302, response.text
    return session


def test_no_table_holds_the_plaintext_and_every_reader_gets_it(server, project, api_key, fake):
    encrypting(project)
    thread_id, run_id = conversation(server, api_key, fake)

    stored = raw_rows()
    assert [s for s in SECRETS if s in stored] == []
    assert base64.b64encode(IMAGE).decode()[:40] not in stored
    assert Thread.objects.get(pk=thread_id).sealed

    # The API.
    thread = requests.get(f"{server.url}/v1/threads/{thread_id}", params={"userKey": "alice"}, timeout=30,
                          headers={"x-api-key": api_key}).text
    assert all(s in thread for s in SECRETS)
    assert base64.b64encode(IMAGE).decode() in thread
    # The event log's replay of a finished run.
    replay = requests.get(f"{server.url}/v1/threads/{thread_id}/runs/{run_id}/events", stream=True, timeout=30,
                          params={"userKey": "alice"}, headers={"x-api-key": api_key})
    assert replay.status_code == 200, replay.text
    assert "SECRET-ANSWER" in "".join(e.get("delta", "") for e in read_events(replay))
    # The admin's thread page, and its searches: by user key, and by words of the content (decrypted
    # in the request, threads/search.py), a tool call's arguments and a tool's result included.
    session = staff_session(server.url)
    page = session.get(f"{server.url}/admin/threads/thread/{thread_id}/change/", timeout=30).text
    assert "SECRET-USER-TEXT" in page and "SECRET-TOOL-RESULT" in page and "SECRET-STATE" in page
    by_user = session.get(f"{server.url}/admin/threads/message/", params={"q": "alice"}, timeout=30).text
    assert "SECRET-USER-TEXT" in by_user  # the list's preview is decrypted too
    for words in ("SECRET-USER-TEXT", "SECRET-TOOL-ARG", "SECRET-TOOL-RESULT"):
        by_words = session.get(f"{server.url}/admin/threads/message/", params={"q": words}, timeout=30).text
        holding = sum(words in json.dumps(m.content) for m in Message.objects.filter(thread_id=thread_id))
        assert holding >= 1 and f"{holding} result" in by_words, words
        threads = session.get(f"{server.url}/admin/threads/thread/", params={"q": words}, timeout=30).text
        assert thread_id in threads, words
    assert [s for s in SECRETS if s in raw_rows()] == []  # searching stored nothing

    # The model's history on the next run: plaintext.
    fake.script(Text("done"))
    post_run(server, api_key, {"previousRunId": run_id, "message": {"role": "user", "content": [
        {"type": "text", "text": "and now?"}]}}, thread_id)
    sent = json.dumps(fake.requests[-1].body)
    assert all(s in sent for s in SECRETS)

    # Forgetting the user still reaches every table.
    wait_logged(thread_id)
    call_command("forget_user", "--project", project.name, "--user", "alice", stdout=io.StringIO())
    assert not any(user_row_counts(project, "alice").values())


def test_rows_written_before_the_setting_stay_readable_and_rotation_seals_them_in_batches(project):
    before = services.thread_create(project=project, user_key="alice")
    services.message_create(thread=before, role="user", content=[{"type": "text", "text": "SECRET-BEFORE"}])
    encrypting(project)
    before.refresh_from_db()
    services.message_create(thread=before, role="user", content=[{"type": "text", "text": "SECRET-AFTER"}])
    later = services.thread_create(project=project, user_key="alice")
    for n in range(4):
        services.message_create(thread=later, role="user", content=[{"type": "text", "text": f"SECRET-{n}"}])
    server = McpServer.objects.create(project=project, name="vaulted", transport="http", url="http://127.0.0.1:9/mcp",
                                      auth="user", oauth_client_secret=secret_store("SECRET-CLIENT"))
    McpToken.objects.create(server=server, project=project, user_key="alice",
                            tokens=secret_store('{"a": "SECRET-TOKEN"}'))

    stored = raw_rows()
    assert "SECRET-BEFORE" in stored and "SECRET-AFTER" not in stored  # mixed rows, both readable
    assert [m.content[0]["text"] for m in Message.objects.filter(thread=before).order_by("created_at")] == [
        "SECRET-BEFORE", "SECRET-AFTER"]

    from django.conf import settings
    settings.SECRETS_KEYS = [NEW_KEY, OLD_KEY]
    out = io.StringIO()
    with CaptureQueriesContext(connection) as queries:
        call_command("rotate_secrets", "--batch", "2", stdout=out)
    settings.SECRETS_KEYS = [NEW_KEY]  # the old key removed: everything still reads

    message_reads = [q["sql"] for q in queries.captured_queries
                     if Message._meta.db_table in q["sql"].split("FROM")[-1] and "LIMIT 2" in q["sql"]]
    assert len(message_reads) == 4  # 6 messages, 2 a batch: 3 full batches and the empty read ending them
    assert "threads.Message 6" in out.getvalue() and "tools.McpToken.tokens 1" in out.getvalue()
    stored = raw_rows()
    assert "SECRET-" not in stored
    texts = sorted(m.content[0]["text"] for m in Message.objects.all())
    assert texts == sorted(["SECRET-BEFORE", "SECRET-AFTER", *(f"SECRET-{n}" for n in range(4))])
    token = McpToken.objects.get()
    assert json.loads(secret_resolve(token.tokens)) == {"a": "SECRET-TOKEN"}
    assert secret_resolve(McpServer.objects.get().oauth_client_secret) == "SECRET-CLIENT"
    assert Fernet(NEW_KEY.encode()).decrypt(token.tokens.removeprefix("fernet:").encode())


def test_the_checkpointed_text_of_a_dead_run_is_stored_encrypted_and_read_back(project):
    encrypting(project)
    thread = services.thread_create(project=project, user_key="alice")
    run = Run.objects.create(thread=thread, status=Run.Status.STREAMING, partial_message_id="msg_partial",
                             partial_text=seal_text("SECRET-PARTIAL", True))
    # Expired inside this test's transaction: a server process's watcher sweeps this database too.
    with transaction.atomic():
        Thread.objects.filter(pk=thread.pk).update(run_status=RunStatus.STREAMING, current_run_id=run.pk,
                                                   lease_expires_at=timezone.now() - timedelta(hours=1))
        assert expired_lease_sweep() == 1

    assert Message.objects.get(pk="msg_partial").content == [{"type": "text", "text": "SECRET-PARTIAL"}]
    assert "SECRET-PARTIAL" not in raw_rows()


def test_retention_takes_uploads_out_of_encrypted_messages_which_stay_encrypted(project):
    from projects.config import Retention
    from retention.policy import UPLOADS_STRIPPED, retention_apply

    project_settings_save(project, ProjectSettings(encrypt_content=True,
                                                   retention=Retention(transcripts_days=365, uploads_days=30)))
    thread = services.thread_create(project=project, user_key="alice")
    text = {"type": "text", "text": "SECRET-RECEIPT"}
    message = services.message_create(thread=thread, role="user",
                                      content=[text, image_part(IMAGE, name="receipt.png")])
    Message.objects.filter(pk=message.pk).update(created_at=timezone.now() - timedelta(days=40))

    # Encrypted, the message cannot be searched for a file: it is read, and its file taken out.
    assert retention_apply()[project.name][UPLOADS_STRIPPED] == 1

    assert Message.objects.get(pk=message.pk).content == [text, {
        "type": "text", "text": "[receipt.png (image/png): removed by the project's retention]"}]
    stored = raw_rows()
    assert "SECRET-RECEIPT" not in stored and "removed by the project" not in stored
