import pytest

from tests.support.sse import read_events, types

pytestmark = pytest.mark.django_db(transaction=True)


def test_it_creates_and_reads_a_thread(api):
    created = api.post("/v1/threads", {"userKey": "alice", "metadata": {"a": 1}})
    assert created.status_code == 201, created.text
    thread = created.json()
    assert thread["id"].startswith("thr_")
    assert thread["runStatus"] == "idle"
    assert "name" not in thread
    got = api.get(f"/v1/threads/{thread['id']}")
    assert got.status_code == 200
    assert got.json()["messages"] == []


def test_a_text_run_streams(api):
    response = api.post("/v1/threads/runs", {"userKey": "alice",
                                             "message": {"role": "user", "content": [{"type": "text", "text": "hi"}]}},
                        stream=True)
    assert response.status_code == 200, response.text
    events = read_events(response)
    names = types(events)
    assert names[0] == "RUN_STARTED" and names[-1] == "RUN_FINISHED", names
    text = "".join(e["delta"] for e in events if e["type"] == "TEXT_MESSAGE_CONTENT")
    assert text.startswith("(offline model) You said: hi")
