"""A project nobody configured (made with `createapikey` alone) is bounded by the server's safe defaults
(docs/abuse-and-limits.md#safe-defaults): the server's own model only, an output cap, a context budget and
a project-wide run rate, on /v1 runs and the gateway. The server answers through the tests' fake vendor,
so what reaches the vendor is what a real one would be sent (and billed for)."""
from __future__ import annotations

import io
from concurrent.futures import ThreadPoolExecutor

import pytest
import requests
from django.conf import settings
from django.core.management import call_command

from tests.projects.test_limits import fresh_minute
from tests.support.fake_openai import FakeOpenAI, Text
from tests.support.fixtures_openai import fake  # noqa: F401 - fixture
from tests.support.live import LiveServer
from tests.support.sse import read_events

pytestmark = pytest.mark.django_db(transaction=True)

SERVER_MODEL = "fake-default"


@pytest.fixture(scope="module")
def vendor():
    # It reports no usage, so the server's estimate is not calibrated by the fake's fixed token counts
    # (runs/context_budget.py): the budget is what a vendor counting like the estimate would see.
    with FakeOpenAI(default_reply=Text(reports_usage=False)) as fake_vendor:
        yield fake_vendor


@pytest.fixture(scope="module")
def server(vendor, django_db_setup, django_db_blocker):
    live = LiveServer("safe-defaults", {"MODEL_PROVIDER": "openai", "OPENAI_BASE_URL": vendor.base_url,
                                        "OPENAI_API_KEY": "sk-server-vendor-key", "OPENAI_MODEL": SERVER_MODEL})
    yield live
    live.stop()


@pytest.fixture
def stranger_key(transactional_db) -> str:
    """The key of a project made with `createapikey` alone: nothing else configured."""
    out = io.StringIO()
    call_command("createapikey", "--project", "nobody-configured", stdout=out, stderr=io.StringIO())
    return out.getvalue().strip().splitlines()[-1]


def _run(server, key: str, text: str, *, thread_id: str | None = None, user: str = "alice", **extra):
    body = {"userKey": user, "message": {"role": "user", "content": [{"type": "text", "text": text}]}, **extra}
    path = f"/v1/threads/{thread_id}/runs" if thread_id else "/v1/threads/runs"
    return requests.post(server.url + path, json=body, headers={"x-api-key": key}, stream=True, timeout=60)


def _chat(server, key: str, **body):
    body.setdefault("messages", [{"role": "user", "content": "hi"}])
    return requests.post(server.url + "/api/chat/completions", json=body,
                         headers={"Authorization": f"Bearer {key}"}, timeout=60)


def test_a_model_the_server_does_not_offer_is_refused_on_runs_and_the_gateway(server, fake, stranger_key):
    run = _run(server, stranger_key, "hi", model="o1-pro")
    assert run.status_code == 400, run.text
    assert run.headers["Content-Type"].startswith("application/problem+json")
    assert run.json()["code"] == "MODEL_NOT_ALLOWED"
    assert run.json()["allowedModels"] == [SERVER_MODEL]

    chat = _chat(server, stranger_key, model="o1-pro")
    assert chat.status_code == 400, chat.text
    assert chat.json()["error"]["code"] == "model_not_found"
    assert fake.requests == []  # nothing reached the vendor

    # The server's own model is offered.
    ok = _run(server, stranger_key, "hi", model=SERVER_MODEL)
    assert ok.status_code == 200, ok.text
    assert read_events(ok)[-1]["type"] == "RUN_FINISHED"
    assert fake.requests[-1].body["model"] == SERVER_MODEL


def test_max_tokens_is_capped_at_the_default_output_cap(server, fake, stranger_key):
    run = _run(server, stranger_key, "hi", maxTokens=1_000_000)
    assert run.status_code == 200, run.text
    assert read_events(run)[-1]["type"] == "RUN_FINISHED"
    assert fake.requests[-1].body["max_tokens"] == settings.DEFAULT_MAX_OUTPUT_TOKENS

    chat = _chat(server, stranger_key, model=SERVER_MODEL, max_tokens=1_000_000)
    assert chat.status_code == 200, chat.text
    assert fake.requests[-1].body["max_tokens"] == settings.DEFAULT_MAX_OUTPUT_TOKENS


def test_a_long_thread_is_trimmed_to_the_default_context_budget(server, fake, stranger_key):
    # Four turns of about 12,500 tokens each: the fourth cannot be sent with all three before it.
    words = 50_000 // 10
    thread_id = previous = None
    for turn in range(4):
        response = _run(server, stranger_key, f"turn{turn} " + "lorem ips " * words, thread_id=thread_id,
                        **({"previousRunId": previous} if previous else {}))
        assert response.status_code == 200, response.text
        thread_id = thread_id or response.headers["X-Thread-Id"]
        previous = response.headers["X-Run-Id"]
        assert read_events(response)[-1]["type"] == "RUN_FINISHED"
    sent = fake.requests[-1].body["messages"]
    users = [m["content"] if isinstance(m["content"], str) else m["content"][0]["text"]
             for m in sent if m["role"] == "user"]
    assert users[-1].startswith("turn3") and not any(u.startswith("turn0") for u in users), [u[:6] for u in users]
    sent_chars = sum(len(str(m.get("content") or "")) for m in sent)
    assert sent_chars / 4 <= settings.DEFAULT_MAX_INPUT_TOKENS


def test_a_burst_is_refused_past_the_default_run_rate_whatever_user_it_names(server, fake, stranger_key):
    burst = settings.DEFAULT_RUNS_PER_MINUTE + 10
    fresh_minute(room=30)

    def one(n: int) -> tuple[int, str | None]:
        # A copied key inventing a user per request: only the project-wide rate bounds it.
        response = _run(server, stranger_key, "hi", user=f"invented-{n}")
        if response.status_code == 200:
            read_events(response)
            return 200, None
        return response.status_code, response.json().get("code")

    with ThreadPoolExecutor(8) as pool:
        answers = list(pool.map(one, range(burst)))
    assert answers.count((200, None)) == settings.DEFAULT_RUNS_PER_MINUTE
    assert answers.count((429, "RATE_LIMITED")) == 10


def test_a_photo_fits_the_default_context_budget(server, fake, stranger_key):
    from tests.support.images import image_part, png

    # About 1.5 MB of base64: counted as text it would be some 500,000 tokens, over any budget; a
    # vendor bills an image by its pixels (providers/estimate.py MEDIA_PART_TOKENS).
    photo = image_part(png(700, 700))
    body = {"userKey": "alice", "message": {"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                                                          photo]}}
    response = requests.post(server.url + "/v1/threads/runs", json=body, headers={"x-api-key": stranger_key},
                             stream=True, timeout=60)
    assert response.status_code == 200, response.text
    assert read_events(response)[-1]["type"] == "RUN_FINISHED"
    assert any(part.get("type") == "image_url" for m in fake.requests[-1].body["messages"]
               if isinstance(m["content"], list) for part in m["content"])
