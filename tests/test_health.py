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
