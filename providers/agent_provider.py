"""The `agent` provider: a project's runs executed by an external agent over AG-UI (docs/models.md#agents).

One model step is one AG-UI run of the agent: the step's messages and the app's tools go out as a
`RunAgentInput` (`agent_input`), POSTed to the operator's URL with the operator's headers; the agent's
event stream comes back and is folded into the deltas every provider yields (`AgentFold`):

- its text and reasoning become TextDelta and ReasoningDelta;
- a call of one of the offered tools (the app's client tools, its components, the project's server
  and MCP tools) becomes a ToolCallDelta, and the step ends `tool_calls`: the advance loop then does
  what it does for a model (a component streams, a client tool pauses the run, and the results are
  the next step's input, sent to the agent on the continuation);
- a call of the agent's own tools is the agent's business: it ran them itself, so they are not
  shown as the app's calls (their cost is in the usage the agent reports);
- RUN_FINISHED ends the step with the agent's usage when it reports any (AG-UI's `usage`), else the
  loop charges its estimate (providers/usage_estimate.py);
- STATE_SNAPSHOT and STATE_DELTA (JSON Patch) change the state the agent was sent; the state it ends
  with goes out on the StepEnd, and the loop stores it as the thread's (sent on the next call), without
  `messages` and `tools`: those are RunAgentInput's own fields, which this server fills from the thread
  and the run (ag-ui-langgraph's snapshots carry both, and it offers a state's `tools` again).

Failures are ModelErrors with fixed, safe sentences: AGENT_UNREACHABLE (no connection), AGENT_TIMEOUT
(the agent stayed silent for the endpoint's timeout), AGENT_REJECTED (a 4xx), AGENT_ERROR (a 5xx,
RUN_ERROR from the agent, a stream cut before RUN_FINISHED, or something that is not AG-UI). Closing
the iterator closes the response, which drops the request to the agent. This module does not import
Django; the URL comes only from the project's settings (projects/config.py ModelSpec), never a request.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import os
import socket
import weakref
from contextlib import aclosing
from dataclasses import replace
from typing import Any, AsyncIterator

import httpx
import jsonpatch
from ag_ui.core import (AssistantMessage, Event, EventType, FunctionCall, RunAgentInput, SystemMessage, Tool,
                        ToolCall, ToolMessage, UserMessage)
from pydantic import TypeAdapter, ValidationError

from core.ids import new_id
from providers.base import (Completion, Delta, ModelError, ModelRequest, ReasoningDelta, StepEnd, TextDelta,
                            ToolCallDelta)
from providers.openai_provider import sse_payloads

MSG_UNREACHABLE = "The agent could not be reached."
MSG_TIMEOUT = "The agent did not answer in time."
MSG_REJECTED = "The agent refused the request."
MSG_FAILED = "The agent failed to answer."
MSG_REPORTED = "The agent reported an error while answering."
MSG_CUT = "The connection to the agent was lost before it finished."
MSG_UNREADABLE = "The agent sent something that is not an AG-UI event stream."
MSG_BAD_STATE = "The agent sent a state change that does not apply to its state."
# What an agent's state may hold that the input carries in fields of its own, never kept as state.
INPUT_KEYS = ("messages", "tools")

_EVENT = TypeAdapter(Event)


class AgentProvider:
    name = "agent"

    def __init__(self, *, url: str, headers: dict[str, str] | None = None, timeout: float = 60.0):
        self.url = url
        self.headers = dict(headers or {})
        self.timeout = timeout
        # One client per event loop, as the vendor providers keep theirs (providers/vendor_client.py).
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = \
            weakref.WeakKeyDictionary()

    def __repr__(self) -> str:
        return f"AgentProvider(url={self.url!r})"

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            # `read` is the longest silence between two bytes: an agent that hangs ends the run then.
            client = httpx.AsyncClient(timeout=httpx.Timeout(self.timeout, connect=min(self.timeout, 10.0)),
                                       follow_redirects=False)
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def stream(self, request: ModelRequest) -> AsyncIterator[Delta]:
        """One AG-UI run of the agent as deltas, ending with StepEnd; raises ModelError on failure."""
        body = agent_input(request).model_dump_json(by_alias=True, exclude_none=True)
        headers = {**self.headers, "Content-Type": "application/json", "Accept": "text/event-stream"}
        fold = AgentFold([tool.name for tool in request.tools], state=_sent_state(request))
        started = False
        client = self._client()
        try:
            response = await client.send(client.build_request("POST", self.url, content=body, headers=headers),
                                         stream=True)
            try:
                _check_response(response)
                started = True
                async for payload in sse_payloads(response.aiter_bytes()):
                    for delta in fold.feed(decode_event(payload)):
                        yield delta
                    if fold.finished:
                        break  # nothing after RUN_FINISHED is read
            finally:
                if not fold.finished:
                    _hang_up(response)
                await _close(response)
            yield fold.end()
        except httpx.TimeoutException as exc:
            raise ModelError("AGENT_TIMEOUT", MSG_TIMEOUT, retryable=True) from exc
        except httpx.TransportError as exc:
            message = MSG_CUT if started else MSG_UNREACHABLE
            raise ModelError("AGENT_ERROR" if started else "AGENT_UNREACHABLE", message, retryable=True) from exc

    async def complete(self, request: ModelRequest) -> Completion:
        """A side task's answer (a thread's name, suggestions: assist/): one agent run without tools,
        its text joined. The same errors as `stream`."""
        texts: list[str] = []
        usage = None
        task = replace(request, messages=instructions_inline(request.messages), tools=[], tool_choice=None)
        async with aclosing(self.stream(task)) as deltas:
            async for delta in deltas:
                if isinstance(delta, TextDelta):
                    texts.append(delta.text)
                elif isinstance(delta, StepEnd):
                    usage = delta.usage
        return Completion(text="".join(texts), usage=usage)


_closing: set[asyncio.Task] = set()


def _hang_up(response: httpx.Response) -> None:
    """Ends the connection under a response left half-read (a cancel, a disconnect, an error) at once:
    a FIN to the agent, whose server then stops its run. Closing the response alone is not enough
    under uvloop (uvicorn's loop): the transport is marked closing, but the socket stays open, unread,
    until the agent ends its answer (seen with `ss` under tests/agents/test_agent_runs.py's cancel).
    The shutdown goes through a duplicate of the socket's descriptor (uvloop's transport sockets refuse
    `shutdown()`); it ends the connection for both, and the close that follows releases the original."""
    stream = response.extensions.get("network_stream")
    sock = stream.get_extra_info("socket") if stream is not None else None
    if sock is None:
        return
    try:
        with socket.socket(fileno=os.dup(sock.fileno())) as duplicate:
            duplicate.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass  # already gone


async def _close(response: httpx.Response) -> None:
    """Closes the response, which drops the connection and so the agent's run. Shielded: a run's cancel
    may cancel this task twice (runs/control.py), and a second cancel inside the close would leave the
    connection open. The close is a task of its own, held here until it ends: the event loop keeps
    only weak references to tasks, and a shielded one nobody awaits any more could be collected
    half-way, leaving the agent streaming to nobody."""
    task = asyncio.ensure_future(response.aclose())
    _closing.add(task)
    task.add_done_callback(_closing.discard)
    await asyncio.shield(task)


def instructions_inline(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A side task's system prompt as the start of its first user turn. Agents do not let a caller's
    system messages reach their model (PydanticAI's AG-UI adapter strips them, ag-ui-langgraph drops a
    leading one): the task's instructions would be lost, and its answer (a title, JSON suggestions)
    would be the agent's usual chat."""
    system = "\n\n".join(_text_of(m.get("content")) for m in messages if m.get("role") == "system")
    rest = [m for m in messages if m.get("role") != "system"]
    for index, message in enumerate(rest):
        if system and message.get("role") == "user":
            rest[index] = {**message, "content": f"{system}\n\n{_text_of(message.get('content'))}"}
            return rest
    return messages


def _check_response(response: httpx.Response) -> None:
    status = response.status_code
    if status >= 400:
        if status == 429 or status >= 500:
            raise ModelError("AGENT_ERROR", MSG_FAILED, retryable=True, status=status)
        raise ModelError("AGENT_REJECTED", MSG_REJECTED, retryable=False, status=status)
    if status != 200 or "text/event-stream" not in response.headers.get("content-type", ""):
        raise ModelError("AGENT_ERROR", MSG_UNREADABLE, retryable=True, status=status)


def decode_event(payload: bytes) -> Any:
    """One `data:` payload as an AG-UI event (ag_ui.core's own models); AGENT_ERROR for anything else."""
    try:
        return _EVENT.validate_json(payload)
    except ValidationError as exc:
        raise ModelError("AGENT_ERROR", MSG_UNREADABLE, retryable=True) from exc


class AgentFold:
    """AG-UI events of one agent run → deltas. Pure: no I/O, so each rule is easy to test alone.

    `offered` are the tool names of the request: calls of those are the app's (ToolCallDelta); any
    other call is the agent's own and stays inside it. `state` is the state the agent was sent, which
    its STATE_DELTA events patch."""

    def __init__(self, offered: list[str], state: Any = None):
        self._offered = set(offered)
        self._calls: dict[str, int] = {}  # the app's calls: AG-UI id → delta index
        self._own: set[str] = set()  # the agent's own calls' ids
        self._text_message: str | None = None
        self._texted = False  # some text was shown: a new message starts a new paragraph
        self._new_paragraph = False
        self._last_call: str | None = None
        self._reasoning_blocks: dict[str, int] = {}
        self.finished = False
        self.usage: dict[str, int] | None = None
        self.state = state
        self.state_reported = False

    def feed(self, event: Any) -> list[Delta]:
        kind = event.type
        if self.finished:
            return []
        if kind in (EventType.TEXT_MESSAGE_START, EventType.TEXT_MESSAGE_CONTENT, EventType.TEXT_MESSAGE_CHUNK):
            return self._text(event.message_id, getattr(event, "delta", None) or "")
        if kind in (EventType.TOOL_CALL_START, EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_CHUNK):
            return self._tool(event)
        if kind in (EventType.REASONING_MESSAGE_START, EventType.REASONING_MESSAGE_CONTENT,
                    EventType.REASONING_MESSAGE_CHUNK):
            return self._reasoning(getattr(event, "message_id", None), getattr(event, "delta", None) or "")
        if kind == EventType.STATE_SNAPSHOT:
            self.state, self.state_reported = event.snapshot, True
            return []
        if kind == EventType.STATE_DELTA:
            self._patch_state(event.delta)
            return []
        if kind == EventType.RUN_ERROR:
            raise ModelError("AGENT_ERROR", MSG_REPORTED, retryable=True)
        if kind == EventType.RUN_FINISHED:
            self.finished = True
            self.usage = usage_of(event.usage)
        # Everything else (RUN_STARTED, STEP_*, MESSAGES_SNAPSHOT, TOOL_CALL_END and _RESULT,
        # the *_END events, CUSTOM, RAW, activity and sub-agent events) changes nothing the app is shown.
        return []

    def _text(self, message_id: str | None, text: str) -> list[Delta]:
        if message_id is not None and message_id != self._text_message:
            # A later message of the same run (after the agent used a tool of its own, say) is a new
            # paragraph of the one answer the app is shown.
            self._text_message = message_id
            self._new_paragraph = self._texted
        if not text:
            return []
        if self._new_paragraph:
            self._new_paragraph, text = False, "\n\n" + text
        self._texted = True
        return [TextDelta(text)]

    def _tool(self, event: Any) -> list[Delta]:
        # A TOOL_CALL_CHUNK without an id continues the chunk before it.
        call_id = event.tool_call_id or (self._last_call if event.type == EventType.TOOL_CALL_CHUNK else None)
        self._last_call = call_id
        if call_id in self._own:
            return []
        index = self._calls.get(call_id)
        if index is None:
            name = getattr(event, "tool_call_name", None)
            if name is None:
                # Arguments of a call that never started: the stream is not AG-UI.
                raise ModelError("AGENT_ERROR", MSG_UNREADABLE, retryable=True)
            if name not in self._offered:
                self._own.add(call_id)
                return []
            index = self._calls[call_id] = len(self._calls)
            return [ToolCallDelta(index=index, id=call_id, name=name, arguments=getattr(event, "delta", None) or "")]
        delta = event.delta or ""
        return [ToolCallDelta(index=index, id=None, name=None, arguments=delta)] if delta else []

    def _reasoning(self, message_id: str | None, text: str) -> list[Delta]:
        block = self._reasoning_blocks.setdefault(message_id or "", len(self._reasoning_blocks))
        return [ReasoningDelta(text, block)] if text else []

    def _patch_state(self, patch: list[Any]) -> None:
        # ag_ui.core reads the operations into models of its own; jsonpatch reads RFC 6902's objects.
        patch = [op.model_dump(mode="json", by_alias=True, exclude_unset=True) if hasattr(op, "model_dump") else op
                 for op in patch]
        # Changes of the input's own keys are not state (INPUT_KEYS); the agent was not sent them.
        patch = [op for op in patch
                 if not (isinstance(op, dict) and (_input_key_path(op.get("path")) or _input_key_path(op.get("from"))))]
        try:
            self.state = jsonpatch.apply_patch(self.state if self.state is not None else {}, patch)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException, TypeError) as exc:
            # A patch that does not apply to the state it was meant for: the agent's state is not what
            # it believes, so storing a guess would be worse than failing.
            raise ModelError("AGENT_ERROR", MSG_BAD_STATE, retryable=True) from exc
        self.state_reported = True

    def end(self) -> StepEnd:
        if not self.finished:
            # The body ended cleanly without RUN_FINISHED: the agent stopped half-way.
            raise ModelError("AGENT_ERROR", MSG_CUT, retryable=True)
        state = self.state
        if isinstance(state, dict):
            state = {key: value for key, value in state.items() if key not in INPUT_KEYS}
        return StepEnd(finish_reason="tool_calls" if self._calls else "stop", usage=self.usage,
                       state=state, state_reported=self.state_reported)


def _input_key_path(path: Any) -> bool:
    parts = path.split("/") if isinstance(path, str) else []
    return len(parts) > 1 and parts[1] in INPUT_KEYS


def usage_of(entries: list[Any] | None) -> dict[str, int] | None:
    """AG-UI's per-model token counts summed as the run's usage; None when the agent reported none."""
    if not entries:
        return None
    prompt = sum(entry.input_tokens or 0 for entry in entries)
    completion = sum(entry.output_tokens or 0 for entry in entries)
    if not prompt and not completion:
        return None
    return {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}


def agent_input(request: ModelRequest) -> RunAgentInput:
    """The step as an AG-UI `RunAgentInput`: the thread's state, the messages (ids derived from their
    content, so the same history has the same ids on every call) and the offered tools.

    This server keeps the thread, and each call carries all of it; so each call is an AG-UI thread of
    its own (`<thread id>.<n>`). An agent that checkpoints by thread id (ag-ui-langgraph) would
    otherwise merge the history it is sent into the one it kept, and its model would read every
    earlier answer twice."""
    run = request.run
    return RunAgentInput(
        thread_id=f"{run.thread_id}.{new_id('call')}" if run else new_id("thr"),
        # Each call of the agent is one AG-UI run of its own (a run of ours may call it several times).
        run_id=new_id("run"),
        parent_run_id=run.run_id if run else None,
        state=_sent_state(request),
        messages=agent_messages(request.messages),
        tools=[Tool(name=tool.name, description=tool.description, parameters=tool.parameters)
               for tool in request.tools],
        context=[],
        forwarded_props={},
    )


def _sent_state(request: ModelRequest) -> Any:
    run = request.run
    return run.state if run and run.state is not None else {}


def agent_messages(messages: list[dict[str, Any]]) -> list[Any]:
    out: list[Any] = []
    seen: dict[str, int] = {}
    for message in messages:
        role = message.get("role")
        digest = hashlib.sha256(json.dumps(message, sort_keys=True, default=str).encode()).hexdigest()[:24]
        seen[digest] = seen.get(digest, 0) + 1
        message_id = f"msg_{digest}_{seen[digest]}"
        content = message.get("content")
        if role == "system":
            out.append(SystemMessage(id=message_id, content=_text_of(content)))
        elif role == "user":
            out.append(UserMessage(id=message_id, content=_text_of(content)))
        elif role == "assistant":
            calls = [ToolCall(id=c["id"], type="function",
                              function=FunctionCall(name=c["function"]["name"], arguments=c["function"]["arguments"]))
                     for c in message.get("tool_calls") or ()]
            out.append(AssistantMessage(id=message_id, content=_text_of(content) or None, tool_calls=calls or None))
        elif role == "tool":
            out.append(ToolMessage(id=message_id, content=_text_of(content), tool_call_id=message["tool_call_id"]))
    return out


def _text_of(content: Any) -> str:
    """A message's text. Images and files are named rather than sent: an agent's own model decides
    what it can read, and AG-UI input parts are not yet read by the agents tested here."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    texts = []
    for part in content:
        if part.get("type") == "text":
            texts.append(part.get("text") or "")
        elif part.get("type") == "image_url":
            texts.append("[an image]")
        elif part.get("type") == "file":
            texts.append(f"[a file: {(part.get('file') or {}).get('filename') or 'unnamed'}]")
    return "\n\n".join(texts)
