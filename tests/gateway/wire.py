"""Helpers for the gateway tests: raw HTTP calls, SSE chunk parsing, and the spec's chunk rules."""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import openai
import requests


def openai_client(base_url: str, key: str) -> openai.OpenAI:
    # No retries: a test must see the first answer, and a 429 must not make it wait.
    return openai.OpenAI(base_url=base_url + "/api", api_key=key, max_retries=0, timeout=30)


@dataclass
class Answer:
    response: requests.Response
    raw: str  # the whole body as text
    events: list[Any]  # decoded `data:` payloads, "[DONE]" kept as the string

    @property
    def chunks(self) -> list[dict[str, Any]]:
        return [e for e in self.events if isinstance(e, dict) and "error" not in e]

    @property
    def choice_chunks(self) -> list[dict[str, Any]]:
        return [c for c in self.chunks if c["choices"]]

    @property
    def text(self) -> str:
        return "".join(c["choices"][0]["delta"].get("content") or "" for c in self.choice_chunks)


def post_chat(base_url: str, key: str | None, body: dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
    sent = {"Authorization": f"Bearer {key}"} if key else {}
    sent.update(headers or {})
    response = requests.post(base_url + "/api/chat/completions", json=body, headers=sent, timeout=30)
    raw = response.text
    events: list[Any] = []
    if response.headers.get("Content-Type", "").startswith("text/event-stream"):
        for block in raw.split("\n\n"):
            if not block:
                continue
            assert block.startswith("data: "), f"not a data line: {block!r}"
            payload = block[len("data: "):]
            events.append(payload if payload == "[DONE]" else json.loads(payload))
    return Answer(response, raw, events)


def assert_spec_stream(answer: Answer, *, include_usage: bool = False) -> None:
    """The wire rules of docs/protocol.md#identity-and-auth for a stream that ended normally."""
    assert answer.response.status_code == 200
    assert answer.response.headers["Content-Type"].startswith("text/event-stream")
    assert "\r" not in answer.raw
    assert answer.raw.endswith("data: [DONE]\n\n")
    assert answer.events.count("[DONE]") == 1
    chunks = answer.chunks
    assert len(chunks) == len(answer.events) - 1, "an error event in a stream that should have succeeded"
    assert len({c["id"] for c in chunks}) == 1 and chunks[0]["id"].startswith("chatcmpl-")
    assert len({c["created"] for c in chunks}) == 1
    assert {c["object"] for c in chunks} == {"chat.completion.chunk"}
    choice_chunks = answer.choice_chunks
    deltas = [c["choices"][0]["delta"] for c in choice_chunks]
    assert all(isinstance(d, dict) for d in deltas)
    assert deltas[0]["role"] == "assistant"
    assert all("role" not in d for d in deltas[1:])
    finishes = [c["choices"][0]["finish_reason"] for c in choice_chunks]
    assert finishes[-1] in ("stop", "length", "tool_calls", "content_filter")
    assert all(f is None for f in finishes[:-1])
    seen_calls: set[int] = set()
    for delta in deltas:
        for call in delta.get("tool_calls") or []:
            if call["index"] not in seen_calls:
                seen_calls.add(call["index"])
                assert call["id"] and call["type"] == "function" and call["function"]["name"]
            else:
                assert set(call) == {"index", "function"} and set(call["function"]) == {"arguments"}
    if include_usage:
        assert chunks[-1]["choices"] == [] and set(chunks[-1]["usage"]) >= {"prompt_tokens", "completion_tokens",
                                                                           "total_tokens"}
        assert choice_chunks[-1]["usage"] == chunks[-1]["usage"]
        assert chunks[-2] is choice_chunks[-1]
    else:
        assert chunks[-1] is choice_chunks[-1]
        assert all("usage" not in c for c in chunks)


def tool_calls_of(answer: Answer) -> list[dict[str, Any]]:
    """The tool calls of a stream, reassembled by index."""
    calls: dict[int, dict[str, Any]] = {}
    for chunk in answer.choice_chunks:
        for part in chunk["choices"][0]["delta"].get("tool_calls") or []:
            call = calls.setdefault(part["index"], {"id": part.get("id"), "name": part["function"].get("name"),
                                                    "arguments": ""})
            call["arguments"] += part["function"].get("arguments") or ""
    return [calls[i] for i in sorted(calls)]


def weather_tool(name: str = "get_weather") -> dict[str, Any]:
    return {"type": "function", "function": {
        "name": name, "description": "The weather in a city.",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}
