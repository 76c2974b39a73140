"""While the event log takes nothing (a write of it failed: the database is away), a run's unwritten events
are bounded by RUN_EVENTS_UNLOGGED_BYTES: the oldest are given up, counted and logged, the newest (the
run's last event among them) kept for when the log comes back (runs/stream/feeds.py). A log that is only
slow loses nothing."""
import logging

from ag_ui.core import CustomEvent, RunFinishedEvent

from runs.stream.feeds import Feed
from runs.stream.sse import encode_event


def _append(feed: Feed, count: int) -> None:
    for index in range(count):
        event = CustomEvent(name="filler", value=f"{index:06d}" + "x" * 100)
        feed.append(encode_event(event), event)


def test_unwritten_events_past_the_bound_are_given_up_oldest_first_counted_and_logged_once(settings, caplog):
    settings.RUN_EVENTS_BUFFER_BYTES = 20_000
    settings.RUN_EVENTS_UNLOGGED_BYTES = 50_000
    feed = Feed("run_outage", logged=True)
    caplog.set_level(logging.WARNING, logger="runs.stream.feeds")
    feed.log_failed()

    _append(feed, 2000)  # about 300 KB, and the log takes none of it
    finished = RunFinishedEvent(thread_id="thr_x", run_id="run_outage")
    feed.append(encode_event(finished), finished)
    feed.seal()

    kept = [seq for seq, _, _ in feed.unlogged]
    assert sum(len(data) for _, data, _ in feed.unlogged) <= 50_000
    assert feed.lost > 0 and feed.lost + len(kept) == 2001
    assert kept == list(range(feed.lost + 1, 2002))  # the oldest went; the last event is kept
    assert feed.unlogged[-1][2] is True
    # What readers may hold is bounded too: given up, the events may leave memory like written ones.
    assert feed.first_seq > feed.lost
    assert [r.getMessage() for r in caplog.records].count(
        "Run run_outage: the event log is not taking events; the oldest unwritten ones are given up past "
        "RUN_EVENTS_UNLOGGED_BYTES (50000 bytes)") == 1


def test_within_the_bound_nothing_is_given_up(settings):
    settings.RUN_EVENTS_UNLOGGED_BYTES = 1_000_000
    feed = Feed("run_short_outage", logged=True)

    _append(feed, 2000)
    feed.seal()

    assert feed.lost == 0 and [seq for seq, _, _ in feed.unlogged] == list(range(1, 2001))


def test_a_log_that_is_only_slow_loses_nothing_and_a_failed_write_bounds_what_waited(settings):
    settings.RUN_EVENTS_BUFFER_BYTES = 20_000
    settings.RUN_EVENTS_UNLOGGED_BYTES = 50_000
    feed = Feed("run_slow_log", logged=True)

    _append(feed, 2000)  # six times the bound, and no write has failed
    feed.seal()
    assert feed.lost == 0 and [seq for seq, _, _ in feed.unlogged] == list(range(1, 2001))

    feed.log_failed()
    assert feed.lost > 0 and sum(len(data) for _, data, _ in feed.unlogged) <= 50_000
    assert feed.unlogged[-1][0] == 2000

    feed.mark_logged(2000)  # the log is back: what follows waits for it again, however much
    _append(feed, 2000)
    feed.seal()
    assert [seq for seq, _, _ in feed.unlogged] == list(range(2001, 4001))
