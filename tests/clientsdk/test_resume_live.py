"""Resumable runs through the client against the real server (docs/protocol.md#resumable-runs): joining a live run
from a second client, replaying a finished one, resuming across a connection a TCP proxy really
drops, and the errors of the events route.

The server here has an offline model that waits OFFLINE_MODEL_DELAY between its 12-character
deltas, so a long message is answered over a couple of seconds: long enough to join, or to drop
the connection, while the run is alive.
"""
from __future__ import annotations

import threading

import pytest
from ag_ui.core import EventType

from clientsdk import APIConnectionError, BadRequestError, Client, NotFoundError
from tests.support.cutting_proxy import CuttingProxy
from tests.support.live import LiveServer

pytestmark = pytest.mark.django_db(transaction=True)

LONG = "please repeat this: " + " ".join(f"word{i}" for i in range(150))


@pytest.fixture(scope="module")
def live_server_process(django_db_setup, django_db_blocker):
    server = LiveServer("resume", extra_env={"OFFLINE_MODEL_DELAY": "0.02"})
    yield server
    server.stop()


@pytest.fixture
def client(live_server_url, api_key):
    with Client(live_server_url, api_key, "alice", timeout=30) as c:
        yield c


@pytest.fixture
def second_client(live_server_url, api_key):
    with Client(live_server_url, api_key, "alice", timeout=30) as c:
        yield c


def read_all(stream) -> list[tuple[str | None, dict]]:
    """(event id, event as sent) for each server event a RunStream yields."""
    return [(stream.last_event_id, event.model_dump()) for event, _ in stream]


def text_of(events: list[tuple[str | None, dict]]) -> str:
    return "".join(e["delta"] for _, e in events if e["type"] == EventType.TEXT_MESSAGE_CONTENT)


def assert_numbered_once(events: list[tuple[str | None, dict]]) -> None:
    assert [seq for seq, _ in events] == [str(n) for n in range(1, len(events) + 1)]
    assert events[0][1]["type"] == EventType.RUN_STARTED and events[-1][1]["type"] == EventType.RUN_FINISHED


def test_a_second_client_joining_a_live_run_gets_the_same_events(client, second_client):
    stream = client.run(LONG)
    mine = []
    for event, _ in stream:
        mine.append((stream.last_event_id, event.model_dump()))
        if event.type == EventType.TEXT_MESSAGE_CONTENT:
            break  # the run is producing: join it now, from its first event
    joined = second_client.join(stream.thread_id, stream.run_id)
    theirs: list = []
    reader = threading.Thread(target=lambda: theirs.extend(read_all(joined)))
    reader.start()
    mine += read_all(stream)
    reader.join(30)

    assert_numbered_once(mine)
    assert theirs == mine
    assert "word149" in text_of(mine)
    assert joined.snapshot.status == "finished" and joined.snapshot.last_text == stream.snapshot.last_text


def test_joining_a_finished_run_replays_it_all_or_after_an_id(client, second_client):
    stream = client.run(LONG)
    mine = read_all(stream)
    assert_numbered_once(mine)

    assert read_all(second_client.join(stream.thread_id, stream.run_id)) == mine
    assert read_all(second_client.join(stream.thread_id, stream.run_id, after=3)) == mine[3:]


def test_a_dropped_connection_is_resumed_and_every_event_comes_once(live_server_url, live_server_process, api_key,
                                                                    second_client):
    # The proxy cuts the run's own stream after 2,000 bytes: mid-answer, most likely mid-event.
    with CuttingProxy(live_server_process.port, cut_after=2000) as proxy, \
            Client(proxy.url, api_key, "alice", timeout=30) as through_proxy:
        stream = through_proxy.run(LONG, resume=True)
        resumed = read_all(stream)
        assert proxy.cut_count == 1
        assert stream.reconnects >= 1

    uninterrupted = read_all(second_client.join(stream.thread_id, stream.run_id))
    assert_numbered_once(resumed)
    assert resumed == uninterrupted
    thread = second_client.threads.retrieve(stream.thread_id)
    assert thread.run_status == "idle" and thread.last_completed_run_id == stream.run_id
    assert thread.messages[-1].content[0].text == text_of(resumed) and "word149" in text_of(resumed)


def test_without_resume_a_dropped_connection_is_an_error(live_server_url, live_server_process, api_key):
    # `live_server_url` waits, after the test, until the server has cancelled the run it saw its
    # client leave: flushing the database under that cancel's writes could deadlock.
    with CuttingProxy(live_server_process.port, cut_after=2000) as proxy, \
            Client(proxy.url, api_key, "alice", timeout=30) as through_proxy:
        with pytest.raises(APIConnectionError):
            through_proxy.run(LONG).result()


def test_join_errors_map_to_the_client_error_tree(client, live_server_url, api_key):
    stream = client.run("hello")
    stream.result()
    with pytest.raises(NotFoundError) as unknown:
        list(client.join(stream.thread_id, "run_unknown"))
    assert unknown.value.status_code == 404
    with Client(live_server_url, api_key, "mallory", timeout=30) as other_user:
        with pytest.raises(NotFoundError):
            list(other_user.join(stream.thread_id, stream.run_id))
    for bad in ("abc", "-1", 10**6):
        with pytest.raises(BadRequestError):
            list(client.join(stream.thread_id, stream.run_id, after=bad))
