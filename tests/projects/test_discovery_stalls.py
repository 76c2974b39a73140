"""An issuer whose discovery document stalls (projects/oidc_discovery.py): one that never answers
costs one fetch, not one per exchange (single flight, and the failure remembered for
USER_TOKEN_JWKS_RETRY_SECONDS); one that trickles its document is cut at USER_TOKEN_JWKS_TIMEOUT for
the whole read, not per byte. Before: 20 exchanges made 21 fetches, and a trickling issuer held an
exchange past 100 s. Counted, not timed: what else the process serves meanwhile (/healthz, another
project's whole run) is checked to be answered before the waiting exchanges are."""
import json
from concurrent.futures import ThreadPoolExecutor

import pytest

from tests.projects.test_token_exchange import assert_oauth_error
from tests.support.live import LiveServer
from tests.support.stalling_http import HangingListener, TricklingServer
from tests.support.user_tokens import exchange, rsa_key, sign_rs256

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(scope="module")
def remembering_server(django_db_setup, django_db_blocker):
    # A failure remembered longer than the test takes, however loaded the machine.
    server = LiveServer("discovery-stalls", {"USER_TOKEN_JWKS_RETRY_SECONDS": "600"})
    yield server
    server.stop()


def _issuer(project, url: str) -> None:
    type(project).objects.filter(pk=project.pk).update(
        user_token_hs256_secret="", user_token_public_key="", user_token_jwks_url="", user_token_issuer=url)


def test_twenty_concurrent_exchanges_against_a_hanging_issuer_fetch_its_document_once(remembering_server,
                                                                                     api_key, project):
    with HangingListener() as issuer:
        _issuer(project, issuer.url(""))
        token = sign_rs256(rsa_key(), kid="kid-1", iss=issuer.url(""))
        with ThreadPoolExecutor(20) as pool:
            answers = list(pool.map(lambda _: exchange(remembering_server.url, api_key, token), range(20)))
        connections = len(issuer.accepted)
    for answer in answers:
        assert "did not arrive in time" in assert_oauth_error(answer, 400, "invalid_grant")
    assert connections == 1


def test_a_trickling_issuer_is_cut_at_the_timeout_for_the_whole_read(live_server_url, api_key, project):
    document = json.dumps({"jwks_uri": "http://127.0.0.1:9/jwks.json", "padding": "x" * 60}).encode()
    # A byte every 0.25 s: the document takes 30 s, past any per-read timeout (3 s) never reached.
    with TricklingServer(document, interval=0.25) as issuer:
        _issuer(project, issuer.url(""))
        answer = exchange(live_server_url, api_key, sign_rs256(rsa_key(), kid="kid-1", iss=issuer.url("")))
        sent_when_answered = issuer.sent
    assert "did not arrive in time" in assert_oauth_error(answer, 400, "invalid_grant")
    # Answered while the issuer was still sending: the deadline covered the whole read.
    assert sent_when_answered < len(document) // 2, (sent_when_answered, len(document))


@pytest.fixture(scope="module")
def small_pool_server(django_db_setup, django_db_blocker):
    # Two pooled connections, waited for 3 s; exchanges that wait 8 s for the issuer: longer than the first
    # two /healthz checks would wait for a connection the exchanges held (2 x 3 s), as they did before.
    server = LiveServer("discovery-pool", {"DB_POOL_SIZE": "2", "DB_POOL_TIMEOUT": "3",
                                           "USER_TOKEN_JWKS_TIMEOUT": "8", "USER_TOKEN_JWKS_RETRY_SECONDS": "0"})
    yield server
    server.stop()


def test_exchanges_waiting_for_an_issuer_hold_no_database_connection(small_pool_server, api_key, project,
                                                                     other_project_key):
    import time

    import requests

    from tests.support.sse import iter_events, types

    # PostgreSQL's pool (bin/test runs this file on PostgreSQL only: it is not marked both_dbs).
    with HangingListener() as issuer:
        _issuer(project, issuer.url(""))
        token = sign_rs256(rsa_key(), kid="kid-1", iss=issuer.url(""))
        with ThreadPoolExecutor(30) as pool:
            pending = [pool.submit(exchange, small_pool_server.url, api_key, token) for _ in range(30)]
            while not issuer.accepted:  # the exchanges are waiting for the issuer now
                time.sleep(0.05)
            # Before, each waiting exchange held a pooled connection: with the two taken, /healthz
            # waited DB_POOL_TIMEOUT and answered 503.
            health = [requests.get(small_pool_server.url + "/healthz", timeout=30) for _ in range(3)]
            # Another project's run, start to end, on the same process meanwhile.
            run = requests.post(small_pool_server.url + "/v1/threads/runs", headers={"x-api-key": other_project_key},
                                json={"userKey": "bob", "message": {"role": "user", "content": [
                                    {"type": "text", "text": "hi"}]}}, stream=True, timeout=30)
            run_events = types(list(iter_events(run)))
            still_waiting = sum(not future.done() for future in pending)
            answers = [future.result() for future in pending]
    assert [h.status_code for h in health] == [200, 200, 200]
    assert run.status_code == 200 and run_events[-1] == "RUN_FINISHED", run_events
    assert still_waiting > 0  # /healthz and the run answered while exchanges were blocked on the issuer
    for answer in answers:
        assert "did not arrive in time" in assert_oauth_error(answer, 400, "invalid_grant")
