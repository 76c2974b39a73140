"""Login throttling for the page's login and the Django admin's (django-axes, tambo_project/settings.py):
after LOGIN_FAILURE_LIMIT wrong passwords for an account, or from an address, the right password is
refused too (429) until LOGIN_LOCKOUT_SECONDS have passed. Before, 100 wrong passwords in 37 s were
all tried and then the right one worked. Against a real uvicorn server, through the forms' CSRF.

The lockout is long (failures only count within it: a short one expired while a loaded machine was still
typing the five wrong passwords), and it expires by moving the stored attempts back past it, as the
clock would (`expire_lockouts`), not by waiting."""
from __future__ import annotations

import re
from datetime import timedelta

import pytest
import requests

from tests.support.live import LiveServer

pytestmark = pytest.mark.django_db(transaction=True)

LOCKOUT_SECONDS = 600
LIMIT = 5


@pytest.fixture(scope="module")
def server(django_db_setup, django_db_blocker):
    server = LiveServer("login-throttle", {"LOGIN_FAILURE_LIMIT": str(LIMIT),
                                            "LOGIN_LOCKOUT_SECONDS": str(LOCKOUT_SECONDS)})
    yield server
    server.stop()


def login(base_url: str, path: str, username: str, password: str) -> tuple[requests.Response, requests.Session]:
    """Fills the login form at `path` as a browser does (its CSRF token), without following redirects."""
    session = requests.Session()
    form = session.get(base_url + path, timeout=30)
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', form.text).group(1)
    answer = session.post(base_url + path, timeout=30, allow_redirects=False, headers={"Referer": base_url + path},
                          data={"csrfmiddlewaretoken": token, "username": username, "password": password,
                                "next": "/"})
    return answer, session


def expire_lockouts() -> None:
    """The lockout's time passes: every stored attempt (django-axes' AccessAttempt) is moved back past it."""
    from axes.models import AccessAttempt
    from django.db.models import F

    assert AccessAttempt.objects.update(attempt_time=F("attempt_time") - timedelta(seconds=LOCKOUT_SECONDS + 1))


def logged_in(answer: requests.Response) -> bool:
    return answer.status_code == 302 and "sessionid" in answer.cookies


def test_wrong_passwords_lock_the_account_and_the_address_until_the_lockout_expires(server):
    from django.contrib.auth.models import User

    User.objects.create_user("page-user", password="the-right-password-1")
    User.objects.create_superuser("admin-user", password="the-right-password-2")

    for _ in range(LIMIT - 1):
        answer, _ = login(server.url, "/login/", "page-user", "wrong")
        assert answer.status_code == 200 and not logged_in(answer)  # the form again, with its error
    answer, _ = login(server.url, "/login/", "page-user", "wrong")
    assert answer.status_code == 429  # the limit reached
    # The right password no longer works: the account is locked.
    answer, _ = login(server.url, "/login/", "page-user", "the-right-password-1")
    assert answer.status_code == 429 and not logged_in(answer)
    # The address is locked too: the admin's login refuses another account's right password from it.
    answer, _ = login(server.url, "/admin/login/", "admin-user", "the-right-password-2")
    assert answer.status_code == 429 and not logged_in(answer)

    expire_lockouts()
    answer, _ = login(server.url, "/login/", "page-user", "the-right-password-1")
    assert logged_in(answer), answer.status_code
    answer, _ = login(server.url, "/admin/login/", "admin-user", "the-right-password-2")
    assert logged_in(answer), answer.status_code


def test_the_admin_login_counts_wrong_passwords_too(server):
    from django.contrib.auth.models import User

    User.objects.create_superuser("admin-two", password="the-right-password-3")
    for _ in range(LIMIT - 1):
        answer, _ = login(server.url, "/admin/login/", "admin-two", "wrong")
        assert answer.status_code == 200
    answer, _ = login(server.url, "/admin/login/", "admin-two", "wrong")
    assert answer.status_code == 429
    answer, _ = login(server.url, "/admin/login/", "admin-two", "the-right-password-3")
    assert answer.status_code == 429 and not logged_in(answer)
    expire_lockouts()
