"""sse_stream_to_generator: reading OpenAI-style SSE from network chunks."""

import logging
import threading

import pytest

from clientsdk.message import AbortError, sse_stream_to_generator


def read(chunks, signal=None):
    return list(sse_stream_to_generator(iter(chunks), signal))


def test_it_reads_one_event_per_data_line_and_stops_at_done():
    stream = [b'data: {"a": 1}\n\n', b'data: {"a": 2}\n\n', b"data: [DONE]\n\n", b'data: {"a": 3}\n\n']
    assert read(stream) == [{"a": 1}, {"a": 2}]


def test_it_joins_lines_split_across_network_chunks():
    stream = [b'da', b'ta: {"text": "hel', b'lo"}', b"\n", b"\ndata: {\"n\"", b": 2}\n\n"]
    assert read(stream) == [{"text": "hello"}, {"n": 2}]


def test_it_handles_crlf_split_between_chunks():
    stream = [b'data: {"a": 1}\r', b"\n\r\n", b'data: {"a": 2}\r\n\r\n']
    assert read(stream) == [{"a": 1}, {"a": 2}]


def test_it_decodes_utf8_split_inside_a_character():
    encoded = 'data: {"t": "é"}\n\n'.encode()
    split = encoded.index(b"\xc3") + 1
    assert read([encoded[:split], encoded[split:]]) == [{"t": "é"}]


def test_it_flushes_an_unterminated_final_line():
    assert read([b'data: {"a": 1}\n\ndata: {"last": true}']) == [{"a": 1}, {"last": True}]


def test_it_skips_bad_json_with_a_warning(caplog):
    with caplog.at_level(logging.WARNING, logger="clientsdk.message.sse"):
        events = read([b"data: {not json\n\n", b'data: {"ok": 1}\n\n'])
    assert events == [{"ok": 1}]
    assert "unparsable" in caplog.text


def test_it_joins_multiple_data_lines_of_one_event():
    assert read([b'data: {"a":\ndata: 1}\n\n']) == [{"a": 1}]


def test_it_reads_multiple_data_lines_without_blank_separators():
    assert read([b'data: {"a": 1}\ndata: {"a": 2}\ndata: [DONE]\n']) == [{"a": 1}, {"a": 2}]


def test_it_ignores_comments_and_other_fields():
    stream = [b": keep-alive\n", b"event: message\nid: 7\nretry: 10\n", b'data:{"a": 1}\n\n']
    assert read(stream) == [{"a": 1}]


def test_it_accepts_str_chunks_and_objects_with_iter_content():
    class Response:
        def iter_content(self, chunk_size=None):
            yield 'data: {"a": 1}\n\n'

    assert list(sse_stream_to_generator(Response())) == [{"a": 1}]


def test_it_raises_abort_error_when_aborted_between_chunks():
    signal = threading.Event()

    def chunks():
        yield b'data: {"a": 1}\n\n'
        signal.set()
        yield b'data: {"a": 2}\n\n'

    seen = []
    with pytest.raises(AbortError):
        for event in sse_stream_to_generator(chunks(), signal):
            seen.append(event)
    assert seen == [{"a": 1}]


def test_a_read_error_after_an_abort_is_an_abort_error():
    signal = threading.Event()

    def chunks():
        yield b'data: {"a": 1}\n\n'
        signal.set()
        raise ConnectionResetError("socket shut down by the abort")

    with pytest.raises(AbortError):
        read(chunks(), signal)


def test_a_read_error_without_an_abort_propagates():
    def chunks():
        yield b'data: {"a": 1}\n\n'
        raise ConnectionResetError("peer went away")

    with pytest.raises(ConnectionResetError):
        read(chunks())
