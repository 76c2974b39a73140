"""Bad input to the gateway answers 400 in OpenAI's error shape naming the `param`, never 500."""
from __future__ import annotations

import pytest
import requests

from tests.support.bad_input import BAD_TEXT, BAD_VALUES, DEEP_ARRAY, planted, row_counts

pytestmark = pytest.mark.django_db(transaction=True)

BODY = {"model": "offline", "messages": [{"role": "user", "content": "hi"}], "temperature": 1, "max_tokens": 10,
        # A field TinyRobot sends and the gateway drops; it is still checked, like every byte of the body.
        "metadata": {"ui": 1}}
TEXT_FIELDS = ("model", "messages[0].content", "messages[0].role")
VALUE_FIELDS = ("temperature", "max_tokens", "metadata.ui")
CASES = [pytest.param(field, bad, id=f"{field}-{bad}")
         for field in TEXT_FIELDS + VALUE_FIELDS
         for bad in (BAD_TEXT if field in TEXT_FIELDS else BAD_VALUES)]


def _post(url: str, key: str, raw: bytes) -> requests.Response:
    return requests.post(url + "/api/chat/completions", data=raw, timeout=30,
                         headers={"Authorization": f"Bearer {key}", "Content-Type": "application/json"})


def _assert_invalid_request(response: requests.Response, param: str | None) -> dict:
    assert response.status_code == 400, response.text
    assert response.headers["Content-Type"].startswith("application/json")
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert isinstance(error["message"], str) and error["message"]
    if param is not None:
        assert error["param"] == param or error["param"].startswith(param + "."), error
    return error


def _assert_still_answers(url: str, key: str) -> None:
    response = requests.post(url + "/api/chat/completions", json=BODY, timeout=30,
                             headers={"Authorization": f"Bearer {key}"})
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"].startswith("(offline model)")


@pytest.mark.parametrize(("field", "bad"), CASES)
def test_a_bad_value_is_an_invalid_request_error_naming_the_param(live_server_url, api_key, field, bad):
    before = row_counts()

    response = _post(live_server_url, api_key, planted(BODY, field, BAD_VALUES[bad]))

    _assert_invalid_request(response, field)
    assert row_counts() == before
    _assert_still_answers(live_server_url, api_key)


def test_a_body_nested_100000_levels_is_an_invalid_request_error(live_server_url, api_key):
    error = _assert_invalid_request(_post(live_server_url, api_key, DEEP_ARRAY), None)

    assert "64" in error["message"]
    _assert_still_answers(live_server_url, api_key)


def test_a_model_name_over_200_characters_is_an_invalid_request_error(live_server_url, api_key):
    response = requests.post(live_server_url + "/api/chat/completions", json={**BODY, "model": "m" * 201},
                             headers={"Authorization": f"Bearer {api_key}"}, timeout=30)

    _assert_invalid_request(response, "model")
