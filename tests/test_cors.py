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


@pytest.mark.parametrize("path", ["/v1/threads/runs", "/threads/thr_x/generate-name", "/oauth/token",
                                  "/audio/transcribe", "/api/chat/completions", "/v1/no/such/route"])
def test_a_preflight_echoes_the_headers_the_sdk_asks_for_on_every_api_path(live_server_url, path):
    asked = "content-type, x-api-key, authorization, X-Tambo-React-Version, x-stainless-helper-method"
    response = requests.options(f"{live_server_url}{path}", timeout=10, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": asked})
    assert response.status_code == 204
    assert response.headers["Access-Control-Allow-Headers"] == asked
    assert response.headers["Access-Control-Allow-Methods"] == "GET, POST, PUT, PATCH, DELETE, OPTIONS"
    assert response.headers["Access-Control-Max-Age"] == "600"
    assert "Access-Control-Allow-Credentials" not in response.headers


def test_a_preflight_drops_what_is_not_a_header_name(live_server_url):
    response = requests.options(f"{live_server_url}/v1/threads", timeout=10, headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "GET",
        "Access-Control-Request-Headers": "x-api-key, bad header, x-ok"})
    assert response.headers["Access-Control-Allow-Headers"] == "x-api-key, x-ok"


@pytest.mark.parametrize("path", ["/v1/nope", "/threads/thr_x/nope", "/oauth/nope", "/audio/nope"])
def test_an_unknown_api_path_is_a_404_problem_with_cors_headers(live_server_url, path):
    response = requests.get(f"{live_server_url}{path}", headers={"Origin": ORIGIN}, timeout=10)
    assert response.status_code == 404
    assert response.headers["Content-Type"].startswith("application/problem+json")
    assert response.json()["code"] == "NOT_FOUND"
    assert response.headers["Access-Control-Allow-Origin"] == "*"
    assert "Retry-After" in response.headers["Access-Control-Expose-Headers"]


def test_an_error_answer_carries_the_cors_headers_too(live_server_url):
    response = requests.get(f"{live_server_url}/v1/threads?userKey=a", headers={"Origin": ORIGIN}, timeout=10)
    assert response.status_code == 401
    assert response.headers["Access-Control-Allow-Origin"] == "*"
