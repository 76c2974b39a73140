"""Bodies over MAX_REQUEST_BYTES answer 413, also when they come chunked with no Content-Length."""
import pytest
import requests

pytestmark = pytest.mark.django_db(transaction=True)

BIG = 1_100_000  # over the default 1,000,000-byte limit


def _chunks(total: int, size: int = 64 * 1024):
    sent = 0
    while sent < total:
        piece = min(size, total - sent)
        sent += piece
        yield b" " * piece


def test_it_refuses_a_chunked_body_over_the_limit(live_server_url, api_key):
    response = requests.post(f"{live_server_url}/v1/threads", data=_chunks(BIG), timeout=30,
                             headers={"x-api-key": api_key, "content-type": "application/json"})
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["code"] == "PAYLOAD_TOO_LARGE"


def test_it_refuses_a_chunked_gateway_body_in_openai_shape(live_server_url, api_key):
    response = requests.post(f"{live_server_url}/api/chat/completions", data=_chunks(BIG), timeout=30,
                             headers={"x-api-key": api_key, "content-type": "application/json"})
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "payload_too_large"


@pytest.mark.parametrize("body", [b"x" * BIG, _chunks(BIG)], ids=["content-length", "chunked"])
def test_it_refuses_an_oauth_body_over_the_limit_in_oauth_shape(live_server_url, api_key, body):
    response = requests.post(f"{live_server_url}/oauth/token", data=body, timeout=30,
                             headers={"x-api-key": api_key, "content-type": "application/x-www-form-urlencoded"})
    assert response.status_code == 413
    assert response.json()["error"] == "invalid_request"
    assert "larger than" in response.json()["error_description"]
    assert response.headers["cache-control"] == "no-store"


def test_it_refuses_a_v1_body_with_a_content_length_over_the_limit(live_server_url, api_key):
    response = requests.post(f"{live_server_url}/v1/threads", data=b" " * BIG, timeout=30,
                             headers={"x-api-key": api_key, "content-type": "application/json"})
    assert response.status_code == 413
    assert response.headers["content-type"].startswith("application/problem+json")
    assert response.json()["instance"] == "/v1/threads"
