"""What a reader of a run's feed may hold (docs/protocol.md#resumable-runs): TAKE_BYTES at a time, so a reader that
stops reading falls behind what the feed keeps and is cut, however much the run had produced when
it last took (runs/stream/feeds.py)."""
from ag_ui.core import CustomEvent, TextMessageContentEvent

from runs.stream.feeds import DONE, LAGGED, MORE, TAKE_BYTES, Feed
from runs.stream.sse import MERGE_BYTES, encode_event


def _append(feed: Feed, size: int, count: int = 1) -> None:
    for _ in range(count):
        event = CustomEvent(name="filler", value="x" * size)
        feed.append(encode_event(event), event)


def test_a_reader_takes_a_bounded_slice_and_is_cut_once_the_feed_drops_what_it_lacks(settings):
    settings.RUN_EVENTS_BUFFER_BYTES = 20_000
    feed = Feed("run_x", logged=True)
    _append(feed, 100, count=2000)  # ~300 KB, none of it in the log yet: all of it kept

    chunk, cursor, state = feed.take(0)

    assert 0 < len(chunk) <= TAKE_BYTES and state == MORE
    assert 0 < cursor < feed.last_seq == 2000
    # Written to the log, the events may go: the feed keeps its 20 KB, and the reader that stopped
    # at `cursor` lacks some of what it dropped.
    feed.mark_logged(feed.last_seq)
    assert feed.first_seq > cursor + 1
    assert feed.take(cursor) == (b"", cursor, LAGGED)


def test_a_reader_that_keeps_up_reads_everything_in_slices(settings):
    settings.RUN_EVENTS_BUFFER_BYTES = 1_000_000
    feed = Feed("run_y", logged=True)
    _append(feed, 100, count=2000)
    feed.end()
    cursor, chunks = 0, []
    while True:
        chunk, cursor, state = feed.take(cursor)
        chunks.append(chunk)
        if state == DONE:
            break
    assert cursor == 2000 and b"".join(chunks).count(b"id: ") == 2000
    assert len(chunks) > 1 and max(len(chunk) for chunk in chunks) <= TAKE_BYTES


def test_one_event_larger_than_a_slice_is_taken_whole(settings):
    settings.RUN_EVENTS_BUFFER_BYTES = 1_000_000
    feed = Feed("run_z", logged=True)
    _append(feed, 3 * TAKE_BYTES)
    chunk, cursor, _ = feed.take(0)
    assert cursor == 1 and len(chunk) > 3 * TAKE_BYTES


def test_text_deltas_ready_together_merge_into_events_of_a_bounded_size(settings):
    # A reader that takes after the model sent megabytes gets them as many events, not one it
    # would have to take whole.
    settings.RUN_EVENTS_BUFFER_BYTES = 20_000
    feed = Feed("run_t", logged=True)
    for _ in range(20_000):
        event = TextMessageContentEvent(message_id="msg_1", delta="twelve chars")
        feed.append(encode_event(event), event)

    chunk, cursor, _ = feed.take(0)

    assert 1 < cursor < 20_000 and len(chunk) <= TAKE_BYTES
    assert max(len(line) for line in chunk.split(b"\n")) <= MERGE_BYTES
