"""GET /healthz: for load balancers and the compose healthcheck."""
import pytest
import requests
from django.db import connection

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.both_dbs
def test_it_reports_ok_with_the_database_vendor(live_server_url):
    response = requests.get(live_server_url + "/healthz", timeout=30)

    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": connection.vendor}


def test_it_needs_no_api_key(client):
    response = client.get("/healthz")

    assert response.status_code == 200
    assert response.json()["status"] == "ok"


def test_an_unhealthy_answer_says_when_to_look_again(client, monkeypatch):
    # Every 503 carries Retry-After (docs/protocol.md#errors), the health check's too.
    from django.db import OperationalError

    def refuse(*args, **kwargs):
        raise OperationalError("the database is away")

    monkeypatch.setattr(connection, "cursor", refuse)
    response = client.get("/healthz")

    assert response.status_code == 503
    assert int(response["Retry-After"]) > 0
