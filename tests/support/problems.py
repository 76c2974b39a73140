"""Assertions on problem+json answers (docs/protocol.md#errors)."""
from __future__ import annotations

PROBLEM_MEMBERS = {"type", "title", "status", "detail", "instance", "code"}


def assert_problem(response, status: int, code: str, **extra) -> dict:
    """The answer is an RFC 9457 problem with `status` and `code`; returns its body.

    `extra` members must be present with these values (for example `field="limit"`).
    """
    assert response.status_code == status, response.text
    assert response.headers["Content-Type"].startswith("application/problem+json"), response.headers
    body = response.json()
    assert PROBLEM_MEMBERS <= set(body), body
    assert body["status"] == status
    assert body["code"] == code, body
    assert body["type"] == f"urn:tambo:error:{code.lower()}"
    assert isinstance(body["title"], str) and body["title"]
    assert isinstance(body["detail"], str) and body["detail"]
    assert "Traceback" not in response.text
    for name, value in extra.items():
        assert body.get(name) == value, (name, body)
    return body
