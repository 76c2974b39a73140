"""Schemathesis over /v1/openapi.json against the live server: no generated request answers 5xx.

Every operation, POST included, with schema-conforming and schema-violating data (NUL bytes and
lone surrogates allowed), a fixed seed and a small budget for CI. `bin/fuzz` runs the same
generation at a larger budget.
"""
from __future__ import annotations

import os
import zlib
from collections import Counter
from pathlib import Path
from typing import Iterator

import hypothesis
import pytest
import requests
import schemathesis
from schemathesis.checks import not_a_server_error

from tests.support.fixtures_openai import vendor  # noqa: F401 - a fixture

pytestmark = pytest.mark.django_db(transaction=True)

USER_KEY = "fuzz"
# Per operation, besides the examples and coverage phases' own cases (about
# 1,500 requests in all, under a minute). bin/fuzz raises it through the environment.
EXAMPLES_PER_OPERATION = int(os.environ.get("TAMBO_FUZZ_EXAMPLES", "5"))
SEED = int(os.environ.get("TAMBO_FUZZ_SEED", "20261201"))
SUMMARY = Path(__file__).resolve().parents[1] / "test-artifacts" / "fuzz-summary.txt"
_answers: Counter[str] = Counter()


@pytest.fixture(scope="module", autouse=True)
def fuzz_summary() -> Iterator[None]:
    """Writes how many requests were sent and how they were answered (bin/fuzz prints it)."""
    yield
    SUMMARY.parent.mkdir(exist_ok=True)
    lines = [f"cases: {sum(_answers.values())}", f"seed: {SEED}", f"examples per operation: {EXAMPLES_PER_OPERATION}"]
    lines += [f"{count:7d}  {answer}" for answer, count in sorted(_answers.items())]
    SUMMARY.write_text("\n".join(lines) + "\n")


@pytest.fixture
def fuzz_target(live_server_url, project, api_key, vendor) -> dict[str, str]:
    """A key, and a real thread of the fixed user so that some cases reach past the 404; the project
    transcribes with the fake vendor, so an upload that passes the checks is answered, not 503."""
    from projects.config import ProjectSettings, TranscriptionSpec, project_settings_save

    project_settings_save(project, ProjectSettings(transcription=TranscriptionSpec(
        model="whisper-1", base_url=vendor.base_url, api_key="sk-fuzz")))
    session = requests.Session()
    session.headers["x-api-key"] = api_key
    created = session.post(f"{live_server_url}/v1/threads", json={"userKey": USER_KEY}, timeout=30)
    assert created.status_code == 201, created.text
    return {"url": live_server_url, "key": api_key, "thread": created.json()["id"]}


def _served_schema() -> dict:
    """The document /v1/openapi.json serves, built by the same generator at collection time.

    (A schema loaded lazily from a fixture would be simpler, but schemathesis 4's lazy loader does
    not work under pytest 9: it writes `request.node._nodeid`, which pytest 9 no longer has.)
    """
    from drf_spectacular.generators import SchemaGenerator

    return SchemaGenerator().get_schema(request=None, public=True)


schema = schemathesis.openapi.from_dict(_served_schema())
schema.config.generation.update(max_examples=EXAMPLES_PER_OPERATION, allow_x00=True, database="none")


def prepare(case, target: dict[str, str]) -> None:
    """A fixed userKey; half the cases (by their generated id) aim at the real thread."""
    if isinstance(case.query, dict) or case.query is None:
        case.query = {**(case.query or {}), "userKey": USER_KEY}
    if isinstance(case.body, dict) and "userKey" in case.body:
        case.body = {**case.body, "userKey": USER_KEY}
    params = case.path_parameters or {}
    deletes_thread = case.method.upper() == "DELETE" and case.path == "/v1/threads/{threadId}"
    # The live thread stream of a real thread stays open for as long as the client reads: its cases
    # keep their generated ids, and get its refusals (its answers: tests/runs/test_thread_stream.py).
    stays_open = case.path == "/v1/threads/{threadId}/events"
    if "threadId" in params and not deletes_thread and not stays_open and zlib.crc32(str(params["threadId"]).encode("utf-8", "surrogatepass")) % 2:
        case.path_parameters = {**params, "threadId": target["thread"]}


@schema.parametrize()
@hypothesis.seed(SEED)
@hypothesis.settings(deadline=None, suppress_health_check=list(hypothesis.HealthCheck),
                     derandomize=False, print_blob=True)
def test_no_generated_request_is_a_server_error(case, fuzz_target):
    prepare(case, fuzz_target)
    try:
        response = case.call_and_validate(base_url=fuzz_target["url"], headers={"x-api-key": fuzz_target["key"]},
                                          checks=[not_a_server_error], timeout=30)
    except BaseException:
        _answers[f"{case.method.upper()} {case.path} failed"] += 1
        raise
    _answers[f"{case.method.upper()} {case.path} {response.status_code}"] += 1
