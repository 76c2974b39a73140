"""Browser apps on other origins can call the API with a key; sessions never cross origins."""
import pytest
import requests

pytestmark = pytest.mark.django_db(transaction=True)

ORIGIN = "https://app.example.com"


def test_a_preflight_for_a_run_is_allowed(live_server_url):
    response = requests.options(f"{live_server_url}/v1/threads/runs", timeout=10, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, x-api-key"})
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "x-api-key" in response.headers["Access-Control-Allow-Headers"]
    assert "POST" in response.headers["Access-Control-Allow-Methods"]
    assert "Access-Control-Allow-Credentials" not in response.headers


def test_a_cross_origin_run_exposes_the_id_headers(live_server_url, api_key):
    response = requests.post(f"{live_server_url}/v1/threads/runs", timeout=30, headers={
        "Origin": ORIGIN, "x-api-key": api_key},
        json={"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}})
    assert response.status_code == 200
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    exposed = response.headers["Access-Control-Expose-Headers"]
    assert "X-Thread-Id" in exposed and "X-Run-Id" in exposed
    assert "Access-Control-Allow-Credentials" not in response.headers


def test_pages_outside_the_api_get_no_cors_headers(live_server_url):
    response = requests.get(f"{live_server_url}/healthz", headers={"Origin": ORIGIN}, timeout=10)
    assert "Access-Control-Allow-Origin" not in response.headers
