"""Every unknown path answers in its family's shape, never Django's HTML page, and the SDK's older
hosted-service routes answer a JSON 404 that names what to use instead (`GET /projects`: the key's
project). Over real HTTP on the live server; the SDK's own methods under Node."""
from __future__ import annotations

import pytest

from tests.support import node
from tests.support.problems import assert_problem

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.parametrize("path", ["/v1/nowhere", "/threads/thr_x/nowhere", "/registry/DataCard", "/projects/p/api-keys",
                                  "/nowhere", "/static-nothing/x.js"])
def test_an_unknown_tambo_path_is_a_404_problem(api, path):
    response = api.session.get(api.base_url + path, timeout=30, headers={"Accept": "application/json"})
    assert_problem(response, 404, "NOT_FOUND")


def test_an_unknown_gateway_path_is_openais_error_object(api):
    response = api.session.get(api.base_url + "/api/nowhere", timeout=30)
    assert response.status_code == 404 and response.headers["Content-Type"] == "application/json"
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_a_browser_asking_for_a_page_still_gets_a_page_off_the_api(api):
    response = api.session.get(api.base_url + "/nowhere", timeout=30, headers={"Accept": "text/html"})
    assert response.status_code == 404 and response.headers["Content-Type"].startswith("text/html")


def test_get_projects_answers_the_keys_project(api, project):
    response = api.session.get(api.base_url + "/projects", timeout=30)
    assert response.status_code == 200, response.text
    assert response.json() == {**response.json(), "id": project.id, "name": project.name, "isTokenRequired": False}


def test_get_projects_without_a_key_is_a_401_problem(live_server_url):
    import requests

    assert_problem(requests.get(live_server_url + "/projects", timeout=30), 401, "UNAUTHORIZED")


@pytest.mark.parametrize(("method", "path", "instead"), [
    ("POST", "/storage/presign", "inline"),
    ("GET", "/registry/DataCard", "components"), ("DELETE", "/projects/p/api-key/k", "admin")])
def test_a_hosted_service_route_is_a_404_naming_what_to_use_instead(api, method, path, instead):
    response = api.session.request(method, api.base_url + path, json={}, timeout=30)
    body = assert_problem(response, 404, "NOT_FOUND")
    assert instead in body["detail"], body


@pytest.mark.node
def test_the_sdks_older_methods_answer_json_not_a_page(live_server_url, api_key, project):
    result = node.run_scenario("run.mjs", "legacy_routes", live_server_url, api_key)

    assert result["project"] == {"id": project.id, "name": project.name, "isTokenRequired": False}
    assert set(result["refusals"]) == {"registry", "presign", "projectKeys"}
    assert result["mcpToken"] == {}  # served: a project without MCP servers gets no token
    assert all(r["code"] == "NOT_FOUND" and "not served" in r["detail"] for r in result["refusals"].values())
