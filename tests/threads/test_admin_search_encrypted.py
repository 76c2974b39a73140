"""The admin's search by words on a project that encrypts its content (threads/search.py,
docs/projects.md#content-encrypted-at-rest): staff find a message, and its thread, by a word the
database holds only encrypted; the search decrypts a bounded number of the most recent messages and
says when it left older ones out; plaintext projects are searched as before."""
from __future__ import annotations

import pytest
from cryptography.fernet import Fernet
from django.contrib.auth.models import User
from django.db import connection
from django.urls import reverse

import threads.sealing
from projects.config import ProjectSettings, project_settings_save
from projects.models import Project
from threads import services
from threads.models import Message
from threads.search import message_search, thread_search

pytestmark = [pytest.mark.django_db, pytest.mark.both_dbs]

# `admin_client` is pytest-django's: a logged-in superuser (staff).
MESSAGES = reverse("admin:threads_message_changelist")
THREADS = reverse("admin:threads_thread_changelist")
KEY = Fernet.generate_key().decode()


@pytest.fixture(autouse=True)
def keyring(settings):
    settings.SECRETS_KEYS = [KEY]


def a_project(name: str, *, encrypting: bool) -> Project:
    project = Project.objects.create(name=name)
    if encrypting:
        project_settings_save(project, ProjectSettings(encrypt_content=True))
    return project


def said(project: Project, text: str, message_id: str, user_key: str = "alice"):
    thread = services.thread_create(project=project, user_key=user_key)
    services.message_create(thread=thread, role="user", content=[{"type": "text", "text": text}],
                            message_id=message_id)
    return thread


def stored_content(message_id: str) -> str:
    """The message's content column as the database holds it, read with plain SQL."""
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT CAST(content AS TEXT) FROM {Message._meta.db_table} WHERE id = %s", [message_id])
        return cursor.fetchone()[0]


def listed(client, url: str, **params) -> str:
    response = client.get(url, params)
    assert response.status_code == 200
    return response.content.decode()


def test_a_word_of_an_encrypted_message_finds_the_message_and_its_thread(admin_client):
    project = a_project("sealed", encrypting=True)
    pizza = said(project, "Order a Pineapple pizza for Friday", "msg_pizza")
    other = said(project, "Something else entirely", "msg_other", user_key="bob")
    assert pizza.sealed and "pineapple" not in stored_content("msg_pizza").lower()

    by_word = listed(admin_client, MESSAGES, q="pineapple")
    by_two_words = listed(admin_client, MESSAGES, q="PINEAPPLE friday")
    threads = listed(admin_client, THREADS, q="pineapple")
    # A term in the thread's user key and another in its words: both must hold, each anywhere.
    by_user_and_word = listed(admin_client, THREADS, q="alice pizza")

    assert "msg_pizza" in by_word and "msg_other" not in by_word
    assert "msg_pizza" in by_two_words and "msg_other" not in by_two_words
    assert pizza.id in threads and other.id not in threads
    assert pizza.id in by_user_and_word and other.id not in listed(admin_client, THREADS, q="bob pizza")
    # Still nothing in clear, after the searches too.
    assert "pineapple" not in stored_content("msg_pizza").lower()


def test_a_word_no_message_of_the_list_holds_finds_nothing(admin_client):
    mine = a_project("mine", encrypting=True)
    theirs = a_project("theirs", encrypting=True)
    said(mine, "Order a pineapple pizza", "msg_pizza")
    said(theirs, "A banana bread recipe", "msg_banana")

    assert "0 results" in listed(admin_client, MESSAGES, q="mango")
    assert "0 results" in listed(admin_client, THREADS, q="mango")
    # The other project's word, in a list filtered to this project.
    assert "0 results" in listed(admin_client, MESSAGES, q="banana", thread__project__id__exact=mine.pk)
    assert "0 results" in listed(admin_client, THREADS, q="banana", project__id__exact=mine.pk)
    assert "msg_banana" in listed(admin_client, MESSAGES, q="banana")
    # The stored form is not searched: its prefix (or any piece of a token) matches no message.
    assert "0 results" in listed(admin_client, MESSAGES, q="fernet")


def test_plaintext_projects_are_searched_in_sql_as_before(admin_client):
    project = a_project("plain", encrypting=False)
    thread = said(project, "Order a pineapple pizza", "msg_pizza")
    said(project, "Something else", "msg_other", user_key="bob")
    assert "pineapple" in stored_content("msg_pizza")

    found, scan = message_search(Message.objects.all(), "pineapple")

    assert [m.id for m in found] == ["msg_pizza"] and scan.scanned == 0  # nothing decrypted
    page = listed(admin_client, MESSAGES, q="pineapple")
    assert "msg_pizza" in page and "msg_other" not in page
    assert thread.id in listed(admin_client, THREADS, q="pineapple")
    assert thread.id in listed(admin_client, THREADS, q="alice")
    assert "0 results" in listed(admin_client, THREADS, q="mango")


def test_the_search_decrypts_at_most_the_bound_newest_first_and_says_so(admin_client, settings, monkeypatch):
    project = a_project("sealed", encrypting=True)
    said(project, "the oldest holds pineapple", "msg_oldest")
    for n in range(4):
        said(project, f"newer message {n}", f"msg_newer_{n}")
    decrypted = []
    unseal = threads.sealing.unseal
    monkeypatch.setattr(threads.sealing, "unseal", lambda value: decrypted.append(value) or unseal(value))

    found, scan = message_search(Message.objects.all(), "pineapple", limit=3)

    assert list(found) == [] and (scan.scanned, scan.limited) == (3, True)
    assert len(decrypted) == 3  # counted: three messages decrypted, not five
    settings.ADMIN_SEARCH_ENCRYPTED_MESSAGES = 3
    page = listed(admin_client, MESSAGES, q="pineapple")
    assert "0 results" in page and "the words of the 3 most recent encrypted messages" in page
    settings.ADMIN_SEARCH_ENCRYPTED_MESSAGES = 5
    page = listed(admin_client, MESSAGES, q="pineapple")
    assert "msg_oldest" in page and "most recent encrypted" not in page
    threads_found, _ = thread_search(project.threads.all(), "pineapple", limit=5)
    assert [t.messages.get().id for t in threads_found] == ["msg_oldest"]


def test_a_message_no_key_decrypts_is_skipped_and_counted(settings):
    project = a_project("sealed", encrypting=True)
    said(project, "written with a key since removed", "msg_lost")
    settings.SECRETS_KEYS = [Fernet.generate_key().decode()]
    said(project, "written with the new key: pineapple", "msg_kept")

    found, scan = message_search(Message.objects.all(), "pineapple")

    assert [m for m in found.values_list("id", flat=True)] == ["msg_kept"]
    assert (scan.scanned, scan.unreadable) == (2, 1)


def test_a_user_who_is_not_staff_is_sent_to_the_login(client):
    said(a_project("sealed", encrypting=True), "Order a pineapple pizza", "msg_pizza")
    client.force_login(User.objects.create_user("visitor", password="pw-visitor-1"))

    for url in (MESSAGES, THREADS):
        response = client.get(url, {"q": "pineapple"})
        assert response.status_code == 302 and "/admin/login/" in response["Location"]
        assert "pineapple" not in response.content.decode() and "msg_pizza" not in response.content.decode()


def test_a_message_written_before_the_project_encrypted_is_still_found_by_its_words(admin_client):
    project = a_project("later", encrypting=False)
    thread = said(project, "Order a pineapple pizza", "msg_before")
    project_settings_save(project, ProjectSettings(encrypt_content=True))
    thread.refresh_from_db()
    assert thread.sealed and "pineapple" in stored_content("msg_before")  # plaintext until rotate_secrets

    # Its thread now encrypts, so SQL no longer searches its content: the decrypting half reads it as it is.
    assert "msg_before" in listed(admin_client, MESSAGES, q="pineapple")
    assert thread.id in listed(admin_client, THREADS, q="pineapple")
