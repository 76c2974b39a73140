"""The `openai` provider: any OpenAI-compatible chat-completions endpoint, through the official client.

Configuration (key, base URL, default model, timeout) is passed in by the caller; this module does not
import Django, so it can be tested against a fake server on its own.
"""
from __future__ import annotations

from contextlib import aclosing
from typing import Any, AsyncIterator, Callable

import openai
import orjson

from clientsdk.retry_after import retry_after_seconds
from providers.base import (Completion, Delta, ModelError, ModelRequest, ModelTool, ReasoningDelta, StepEnd,
                            TextDelta, ToolCallDelta)
from providers.batching import merged, texts_merged
from providers.deadline import MSG_TIMEOUT, within_call_deadline
from providers.vendor_client import VendorProvider, stream_folded

_TOOL_CHOICE_WORDS = ("auto", "required", "none")


def _http_errors() -> tuple[tuple[type[BaseException], ...], tuple[type[BaseException], ...]]:
    """(timeouts, transport errors) of the HTTP library the `openai` client reads the body with:
    the raw body is read outside the client's own error mapping. Recent `openai` releases use the
    `httpx2` fork, older ones `httpx`; both are caught where installed."""
    timeouts: list[type[BaseException]] = []
    errors: list[type[BaseException]] = []
    for name in ("httpx2", "httpx"):
        try:
            module = __import__(name)
        except ImportError:
            continue
        timeouts.append(module.TimeoutException)
        errors.append(module.HTTPError)
        errors.append(module.StreamError)
    return tuple(timeouts), tuple(errors)


_TIMEOUTS, _TRANSPORT_ERRORS = _http_errors()

# Fixed, safe sentences: the upstream text may echo request content or internal details, so it is
# never shown. The original exception stays chained (`__cause__`) for server-side logs.
MSG_RATE_LIMITED = "The model provider is rate limiting requests."
MSG_BAD_CREDENTIALS = "The model provider rejected the configured credentials."
MSG_REJECTED = "The model provider rejected the request."
MSG_SERVER_ERROR = "The model provider failed to answer."
MSG_UNREACHABLE = "The model provider could not be reached."
MSG_CONNECTION_LOST = "The connection to the model provider was lost."
MSG_STREAM_ERROR = "The model provider reported an error while answering."
MSG_UNREADABLE = "The model provider sent a response that could not be read."
MSG_INCOMPLETE = "The model provider ended its answer early."


class OpenAIProvider(VendorProvider):
    name = "openai"

    def _make_client(self) -> openai.AsyncOpenAI:
        return openai.AsyncOpenAI(api_key=self._api_key, base_url=self._base_url, timeout=self.timeout,
                                  http_client=self._http_client(),
                                  max_retries=0)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Delta]:
        """Yield the deltas of one model step, ending with StepEnd; raise ModelError on failure.

        The `openai` client sends the request (auth, headers, error answers); the body is read raw
        (sse_batches + orjson, no per-chunk pydantic objects), and each read's chunks are folded
        together, their deltas merged (providers/batching.py), which keeps a fast model's stream
        cheap. Closing this generator or cancelling its task closes the HTTP response at once, which
        drops the connection to the provider mid-answer.
        """
        params = request_params(request, default_model=self.default_model)
        opening = self._client().chat.completions.with_streaming_response.create(**params)
        # aclosing: closing this generator closes the template's at once, and with it the response.
        async with aclosing(stream_folded(opening, api_error=openai.APIError, to_model_error=model_error,
                                          read=_chunks, fold=_StepFold(), deadlines=self.deadlines)) as deltas:
            async for delta in deltas:
                yield delta

    async def complete(self, request: ModelRequest) -> Completion:
        """One non-streamed answer; the same error mapping and timeout as `stream`, within the
        whole-call deadline (providers/deadline.py)."""
        try:
            response = await within_call_deadline(self._client().chat.completions.create(
                **completion_params(request, default_model=self.default_model)), self.deadlines)
        except openai.APIError as exc:
            raise model_error(exc, started=False) from exc
        except ValueError as exc:  # a body that is not JSON
            raise ModelError("LLM_SERVER_ERROR", MSG_UNREADABLE, retryable=True) from exc
        choice = next((c for c in response.choices or () if c.index == 0), None)
        if choice is None or choice.message is None:
            raise ModelError("LLM_SERVER_ERROR", MSG_UNREADABLE, retryable=True)
        usage = None
        if response.usage is not None:
            usage = {"prompt_tokens": response.usage.prompt_tokens,
                     "completion_tokens": response.usage.completion_tokens,
                     "total_tokens": response.usage.total_tokens}
        return Completion(text=choice.message.content or "", finish_reason=choice.finish_reason or "stop",
                          usage=usage)


async def _chunks(body: AsyncIterator[bytes]) -> AsyncIterator[list[dict[str, Any]]]:
    """The stream's chunk objects, a list per read of the body (every chunk that read completed),
    until `[DONE]` or the end of the body; raises ModelError for a broken connection, a timeout, an
    `{"error": …}` event or data that is not JSON, after handing on the chunks before it."""
    async for chunks in decoded_batches(body, _decoded):
        yield chunks


Decoder = Callable[[list[bytes]], tuple[list[dict[str, Any]], ModelError | None, bool]]


async def decoded_batches(body: AsyncIterator[bytes], decoded: Decoder) -> AsyncIterator[list[dict[str, Any]]]:
    """Each read's payloads through `decoded` (its objects, the ModelError that ends the stream if one
    does, whether it ended), for both vendors' streams: the objects before an error are handed on
    first; a timeout or a broken connection becomes ModelError."""
    try:
        async for payloads in sse_batches(body):
            objects, error, done = decoded(payloads)
            if objects:
                yield objects
            if error is not None:
                raise error
            if done:
                return
    except _TIMEOUTS as exc:
        raise ModelError("LLM_SERVER_ERROR", MSG_TIMEOUT, retryable=True) from exc
    except _TRANSPORT_ERRORS as exc:
        raise ModelError("LLM_SERVER_ERROR", MSG_CONNECTION_LOST, retryable=True) from exc


def _decoded(payloads: list[bytes]) -> tuple[list[dict[str, Any]], ModelError | None, bool]:
    """(the chunks of one read's payloads, up to the first that ends the stream; the ModelError that
    ends it, if one does; whether it ended, by `[DONE]` or an error)."""
    chunks: list[dict[str, Any]] = []
    for payload in payloads:
        if payload == b"[DONE]":
            return chunks, None, True
        try:
            chunk = orjson.loads(payload)
        except orjson.JSONDecodeError as exc:
            return chunks, caused(ModelError("LLM_SERVER_ERROR", MSG_UNREADABLE, retryable=True), exc), True
        if not isinstance(chunk, dict):
            return chunks, ModelError("LLM_SERVER_ERROR", MSG_UNREADABLE, retryable=True), True
        if chunk.get("error") is not None:
            return chunks, ModelError("LLM_SERVER_ERROR", MSG_STREAM_ERROR, retryable=True), True
        chunks.append(chunk)
    return chunks, None, False


def caused(error: ModelError, cause: BaseException) -> ModelError:
    """`error` with `cause` chained, as `raise error from cause` would (for an error raised later)."""
    error.__cause__ = cause
    error.__suppress_context__ = True
    return error


async def sse_payloads(body: AsyncIterator[bytes]) -> AsyncIterator[bytes]:
    """The `data` of each server-sent event in `body`, one at a time (see `sse_batches`)."""
    async for payloads in sse_batches(body):
        for payload in payloads:
            yield payload


async def sse_batches(body: AsyncIterator[bytes]) -> AsyncIterator[list[bytes]]:
    """The `data` of each server-sent event in `body` (several `data:` lines joined by newlines), a
    list per block of the body: the events that block completed (a block that completes none gives
    nothing). Comments and other fields are skipped. Lines may end in LF, CRLF or CR.

    A fast stream's block holds many events: the reader above handles them together
    (providers/batching.py), instead of one await per event."""
    buffer = b""
    data: list[bytes] = []
    async for block in body:
        buffer += block
        if b"\r" in buffer:
            buffer = buffer.replace(b"\r\n", b"\n")
            if buffer.endswith(b"\r"):
                continue  # the LF of a CRLF may be in the next block
            buffer = buffer.replace(b"\r", b"\n")
        lines = buffer.split(b"\n")
        buffer = lines.pop()
        ready: list[bytes] = []
        for line in lines:
            if not line:
                if data:
                    ready.append(b"\n".join(data))
                    data = []
            elif line.startswith(b"data:"):
                value = line[5:]
                data.append(value[1:] if value.startswith(b" ") else value)
        if ready:
            yield ready
    if buffer.startswith(b"data:"):
        value = buffer[5:]
        data.append(value[1:] if value.startswith(b" ") else value)
    if data:
        yield [b"\n".join(data)]


def completion_params(request: ModelRequest, *, default_model: str) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for one non-streamed answer without tools."""
    params = request_params(ModelRequest(messages=request.messages, model=request.model,
                                         max_tokens=request.max_tokens, temperature=request.temperature,
                                         parameters=request.parameters),
                            default_model=default_model)
    del params["stream_options"]
    params["stream"] = False
    if request.json_output:
        params["response_format"] = {"type": "json_object"}
    return params


def request_params(request: ModelRequest, *, default_model: str) -> dict[str, Any]:
    """The keyword arguments of `chat.completions.create` for one streamed step."""
    params: dict[str, Any] = {
        "model": request.model or default_model,
        "messages": _without_thinking_blocks(request.messages),
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.max_tokens is not None:
        params["max_tokens"] = request.max_tokens
    if request.temperature is not None:
        params["temperature"] = request.temperature
    if request.parameters:
        # The project's and server's further parameters, as the endpoint names them (top_p, seed,
        # reasoning_effort…): merged into the body by the client, whatever its version names.
        params["extra_body"] = dict(request.parameters)
    # OpenAI answers 400 to a tool_choice without tools, so both go together or not at all.
    if request.tools:
        params["tools"] = [openai_tool(tool) for tool in request.tools]
        if request.tool_choice is not None:
            params["tool_choice"] = openai_tool_choice(request.tool_choice)
    return params


def _without_thinking_blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The messages without Anthropic's stored thinking blocks (providers/base.py): another vendor
    could not read them, and some refuse unknown fields. Copies only the turns that carry them."""
    if not any("thinking_blocks" in message for message in messages):
        return messages
    return [{k: v for k, v in message.items() if k != "thinking_blocks"} if "thinking_blocks" in message else message
            for message in messages]


def openai_tool(tool: ModelTool) -> dict[str, Any]:
    return {"type": "function",
            "function": {"name": tool.name, "description": tool.description, "parameters": tool.parameters}}


def openai_tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    """Map "auto" | "required" | "none" | {"name": X} to OpenAI's form (which is passed through)."""
    if isinstance(choice, str) and choice in _TOOL_CHOICE_WORDS:
        return choice
    if isinstance(choice, dict):
        if choice.get("type") == "function" and isinstance(choice.get("function"), dict):
            return choice
        if isinstance(choice.get("name"), str):
            return {"type": "function", "function": {"name": choice["name"]}}
    raise ValueError(f"unsupported tool_choice: {choice!r}")


class _StepFold:
    """Turns chat.completion.chunk objects (decoded JSON) into deltas, remembering what the step's
    end needs."""

    def __init__(self) -> None:
        self.finish_reason: str | None = None
        self.usage: dict[str, int] | None = None
        self._started_calls: set[int] = set()

    def feed_read(self, chunks: list[dict[str, Any]]) -> list[Delta]:
        """The deltas of one read's chunks, merged (providers/batching.py). A run of chunks that carry
        nothing but text, the bulk of a fast answer, is joined from their strings, with no delta made
        per chunk."""
        deltas: list[Delta] = []
        texts: list[str] = []
        for chunk in chunks:
            text = _text_only(chunk)
            if text is not None:
                texts.append(text)
                continue
            if texts:
                deltas += texts_merged(texts)
                texts = []
            deltas += self.feed(chunk)
        if texts:
            deltas += texts_merged(texts)
        return merged(deltas)

    def feed(self, chunk: dict[str, Any]) -> list[Delta]:
        usage = chunk.get("usage")
        if usage:
            self.usage = {"prompt_tokens": usage.get("prompt_tokens", 0),
                          "completion_tokens": usage.get("completion_tokens", 0),
                          "total_tokens": usage.get("total_tokens", 0)}
        deltas: list[Delta] = []
        for choice in chunk.get("choices") or ():
            if choice.get("index", 0) != 0:
                continue  # n > 1 is never asked for; ignore anything else.
            delta = choice.get("delta")
            if delta:
                deltas += self._deltas(delta)
            reason = choice.get("finish_reason")
            if reason:
                # "function_call" is the legacy spelling of the same outcome.
                self.finish_reason = "tool_calls" if reason == "function_call" else reason
        return deltas

    def _deltas(self, delta: dict[str, Any]) -> list[Delta]:
        out: list[Delta] = []
        # Reasoning models behind OpenAI-compatible endpoints stream their reasoning as
        # `reasoning_content` (DeepSeek, vLLM, Ollama) or `reasoning` (OpenRouter, Groq).
        reasoning = delta.get("reasoning_content") or delta.get("reasoning")
        if isinstance(reasoning, str) and reasoning:
            out.append(ReasoningDelta(reasoning))
        content = delta.get("content")
        if content:
            out.append(TextDelta(content))
        for call in delta.get("tool_calls") or ():
            function = call.get("function") or {}
            arguments = function.get("arguments") or ""
            index = call.get("index", 0)
            if index not in self._started_calls:
                # Some compatible servers repeat id and name on every fragment; pass them once.
                self._started_calls.add(index)
                out.append(ToolCallDelta(index=index, id=call.get("id"), name=function.get("name"),
                                         arguments=arguments))
            elif arguments:
                out.append(ToolCallDelta(index=index, id=None, name=None, arguments=arguments))
        return out

    def end(self) -> StepEnd:
        if self.finish_reason is None:
            # The body ended cleanly but the model never said it was done: treat as a broken stream.
            raise ModelError("LLM_SERVER_ERROR", MSG_INCOMPLETE, retryable=True)
        return StepEnd(finish_reason=self.finish_reason, usage=self.usage)


def _text_only(chunk: dict[str, Any]) -> str | None:
    """The text of a chunk that carries nothing else `_StepFold.feed` reads (no usage, one choice, index
    0, no finish reason, a delta with non-empty `content` and no reasoning or tool calls), else None."""
    choices = chunk.get("choices")
    if chunk.get("usage") or type(choices) is not list or len(choices) != 1:
        return None
    choice = choices[0]
    delta = choice.get("delta")
    if type(delta) is not dict or choice.get("index", 0) != 0 or choice.get("finish_reason"):
        return None
    content = delta.get("content")
    if (type(content) is not str or not content or delta.get("tool_calls") or delta.get("reasoning_content")
            or delta.get("reasoning")):
        return None
    return content


def model_error(exc: openai.APIError, *, started: bool) -> ModelError:
    """The safe ModelError for an openai client error; `started` is whether the stream had begun."""
    return sdk_model_error(exc, openai, started=started)


def sdk_model_error(exc: Exception, sdk: Any, *, started: bool, server_retry_after: bool = False) -> ModelError:
    """The safe ModelError for an error of a vendor SDK (`sdk`: the `openai` or `anthropic` module,
    whose error classes have the same names): the same codes and sentences for every vendor.
    `server_retry_after`: a 5xx's `Retry-After` is honoured too (Anthropic's 529, overloaded)."""
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        if status == 429:
            return ModelError("LLM_RATE_LIMITED", MSG_RATE_LIMITED, retryable=True, status=status,
                              retry_after=retry_after_seconds(exc.response.headers))
        if 400 <= status < 500:
            message = MSG_BAD_CREDENTIALS if status in (401, 403) else MSG_REJECTED
            return ModelError("LLM_CLIENT_ERROR", message, retryable=False, status=status)
        retry_after = retry_after_seconds(exc.response.headers) if server_retry_after else None
        return ModelError("LLM_SERVER_ERROR", MSG_SERVER_ERROR, retryable=True, status=status, retry_after=retry_after)
    if isinstance(exc, sdk.APITimeoutError):
        message = MSG_TIMEOUT
    elif isinstance(exc, sdk.APIConnectionError):
        message = MSG_CONNECTION_LOST if started else MSG_UNREACHABLE
    elif isinstance(exc, sdk.APIResponseValidationError):
        message = MSG_UNREADABLE
    else:
        message = MSG_STREAM_ERROR  # an `{"error": ...}` event inside the stream
    return ModelError("LLM_SERVER_ERROR", message, retryable=True)
