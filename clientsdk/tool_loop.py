"""The client-tool loop: run, execute the tools the model asked for, continue, until done.

This is `@tambo-ai/client`'s loop with its known flaws fixed:

- it is a flat `while` loop, not recursion, so long tool chains cannot exhaust the stack;
- `max_steps` counts tool rounds exactly: with `max_steps=N`, N rounds of tools run; when the model
  asks for round N+1 the loop stops and raises `MaxStepsExceeded`, leaving the run paused (nothing is
  cancelled, the caller can still answer the pending calls with `submit_tool_results`);
- context helpers and `before_run` hooks run again for every request, so each continuation carries
  fresh `additionalContext` instead of the values from the first request;
- a tool that raises, or a tool this client does not know, becomes an `isError` result the model can
  read; the loop never dies on a tool's exception;
- `cancel()` stops reading *and* cancels the run on the server.

For every client tool it runs, the loop yields a locally made `TOOL_CALL_RESULT` event (its
`message_id` is `"client:<toolCallId>"`) so that a UI shows the result the same way it shows a
server tool's result.

With `resume=True` each run is started with `onDisconnect: "continue"` and read through a
`ResumingStream`: a connection that drops while the run is alive is picked up again from the run's
events route (docs/protocol.md#resumable-runs), and the caller still sees every event once. A joined run
(`Client.join`) is read the same way, but it belongs to whoever started it: the loop never runs
its tools nor continues it.
"""
from __future__ import annotations

import logging
import threading
from collections.abc import Iterator
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from ag_ui.core import EventType, ToolCallResultEvent

from ._tools import block_text
from .snapshot import ThreadSnapshot, accumulate
from .errors import APIConnectionError, APIError, ConflictError, MaxStepsExceeded, NotFoundError, RunError
from .resume import DEFAULT_RESUME_ATTEMPTS, ResumingStream

if TYPE_CHECKING:  # pragma: no cover
    from .client import Client
    from .streaming import Stream

__all__ = ["RunStream"]

logger = logging.getLogger("clientsdk")


class RunStream:
    """Iterate `(event, snapshot)` pairs across all runs of one tool loop, or call `result()`.

    Requests start lazily, at the first `next()`. Raises (from iteration and from `result()`):
    the client's APIError subclasses for HTTP problems, `RunError` after yielding a RUN_ERROR event
    (unless the caller cancelled), `MaxStepsExceeded` when the tool rounds run out.
    """

    def __init__(
        self,
        client: Client,
        *,
        message: dict[str, Any],
        thread_id: str | None,
        previous_run_id: str | None,
        auto_execute_tools: bool,
        max_steps: int,
        run_options: dict[str, Any],
        resume: bool = False,
        resume_attempts: int = DEFAULT_RESUME_ATTEMPTS,
        join: tuple[str, str | None] | None = None,
    ) -> None:
        """`join=(run_id, after)` follows that existing run of `thread_id` instead of starting one
        (`message` is then unused)."""
        if max_steps < 0:
            raise ValueError("max_steps must be >= 0")
        if resume:
            if run_options.get("on_disconnect") not in (None, "continue"):
                raise ValueError('resume=True needs on_disconnect="continue" (the run must outlive the connection)')
            run_options = {**run_options, "on_disconnect": "continue"}
        self.resume = resume or join is not None
        self.resume_attempts = resume_attempts
        self._join = join
        self._client = client
        self._message = message
        self._previous_run_id = previous_run_id
        self.auto_execute_tools = auto_execute_tools
        self.max_steps = max_steps
        self._run_options = run_options
        self.thread_id = thread_id
        self.run_id: str | None = join[0] if join is not None else None
        self.snapshot = ThreadSnapshot(thread_id=thread_id)
        #: Tool rounds executed so far.
        self.steps = 0
        #: Times a dropped stream was opened again from the events route (resume or join).
        self.reconnects = 0
        self.max_steps_exceeded = False
        self.cancelled = False
        self._stream: Stream | None = None
        self._run_active = False
        self._lock = threading.Lock()
        self._iterator = self._loop()

    # --- public surface ---------------------------------------------------------------------

    def __iter__(self) -> RunStream:
        return self

    def __next__(self) -> tuple[Any, ThreadSnapshot]:
        return next(self._iterator)

    def result(self) -> ThreadSnapshot:
        """Run the loop to its end and return the final snapshot (status `cancelled` if cancelled)."""
        for _ in self:
            pass
        return self.snapshot

    def text(self) -> str:
        """Run to the end and return the last assistant text."""
        return self.result().last_text

    def cancel(self) -> None:
        """Stop reading and cancel the active run on the server. Safe from another thread."""
        with self._lock:
            self.cancelled = True
            stream = self._stream
        if stream is not None:
            stream.close()
        self._cancel_on_server()
        self.snapshot = replace(self.snapshot, status="cancelled") if self._was_running() else self.snapshot

    def close(self) -> None:
        """Stop reading without cancelling anything (a paused run stays paused)."""
        with self._lock:
            stream = self._stream
        if stream is not None:
            stream.close()
        self._iterator.close()

    def __enter__(self) -> RunStream:
        return self

    def __exit__(self, exc_type: object, *rest: object) -> None:
        # Leaving the block because of an error (or Ctrl-C) while the model works: cancel it. A
        # joined run is someone else's: leaving only stops reading it.
        if exc_type is not None and self._run_active and self._join is None:
            self.cancel()
        self.close()

    # --- the loop ---------------------------------------------------------------------------

    @property
    def last_event_id(self) -> str | None:
        """The SSE id of the event last yielded from the server (None without one, and for the
        loop's own TOOL_CALL_RESULT events, which do not change it)."""
        stream = self._stream
        return getattr(stream, "last_event_id", None)

    def _was_running(self) -> bool:
        return self.snapshot.status in ("idle", "running")

    def _raise_if_failed(self) -> None:
        snap = self.snapshot
        if snap.status in ("error", "cancelled"):
            err = snap.error
            raise RunError(err.message if err else "run failed", code=err.code if err else None,
                           category=err.category if err else None,
                           is_retryable=err.is_retryable if err else False,
                           run_id=snap.run_id, snapshot=snap)

    def _loop(self) -> Iterator[tuple[Any, ThreadSnapshot]]:
        if self._join is not None:
            yield from self._follow_joined()
            return
        message = self._message
        previous_run_id = self._previous_run_id
        if self.thread_id is not None and previous_run_id is None:
            # The server requires the last completed run's id on a thread that has one.
            previous_run_id = self._client.threads.retrieve(self.thread_id).last_completed_run_id
        while True:
            yield from self._one_run(message, previous_run_id)
            if self.cancelled:
                return
            self._raise_if_failed()
            snap = self.snapshot
            if not snap.pending_tool_calls or not self.auto_execute_tools:
                return
            if self.steps >= self.max_steps:
                self.max_steps_exceeded = True
                raise MaxStepsExceeded(self.max_steps, snap)
            self.steps += 1
            blocks = []
            for call in snap.pending_tool_calls:
                if self.cancelled:
                    return
                block = self._client.execute_tool_call(call)
                blocks.append(block)
                event = ToolCallResultEvent(
                    message_id=f"client:{call.tool_call_id}", tool_call_id=call.tool_call_id,
                    content=block_text(block), role="tool", isError=bool(block.get("isError")),
                )
                self.snapshot = accumulate(self.snapshot, event)
                yield event, self.snapshot
            message = {"role": "user", "content": blocks}
            previous_run_id = snap.run_id

    def _one_run(self, message: dict[str, Any], previous_run_id: str | None) -> Iterator[tuple[Any, ThreadSnapshot]]:
        body = self._client.build_run_body(
            message, previous_run_id=previous_run_id, new_thread=self.thread_id is None, **self._run_options
        )
        stream: Stream | ResumingStream = self._client.runs.create_from_body(body, thread_id=self.thread_id)
        if self.resume:
            stream = ResumingStream(self._open_events, first=stream, max_attempts=self.resume_attempts)
        yield from self._follow(stream)

    def _follow_joined(self) -> Iterator[tuple[Any, ThreadSnapshot]]:
        assert self._join is not None and self.thread_id is not None
        run_id, after = self._join
        stream = ResumingStream(self._open_events, thread_id=self.thread_id, run_id=run_id, after=after,
                                max_attempts=self.resume_attempts)
        yield from self._follow(stream)
        if not self.cancelled:
            self._raise_if_failed()

    def _open_events(self, thread_id: str, run_id: str, after: str | None) -> Stream:
        return self._client.runs.events(thread_id, run_id, after=after)

    def _follow(self, stream: Stream | ResumingStream) -> Iterator[tuple[Any, ThreadSnapshot]]:
        """Fold and yield one run's events; the run counts as active until its terminal event."""
        with self._lock:
            self._stream = stream
            self._run_active = True
            self.thread_id = stream.thread_id or self.thread_id
            self.run_id = stream.run_id or self.run_id
            cancelled = self.cancelled
        if cancelled:  # cancel() came while the request was being sent
            stream.close()
            self._cancel_on_server()
            return
        terminal = False
        try:
            with stream:
                for event in stream:
                    self.snapshot = accumulate(self.snapshot, event)
                    self.thread_id = self.snapshot.thread_id or self.thread_id
                    self.run_id = self.snapshot.run_id or self.run_id
                    if event.type in (EventType.RUN_FINISHED, EventType.RUN_ERROR):
                        terminal = True
                        self._run_active = False
                    self._feed_streamable_tool(event)
                    yield event, self.snapshot
                    if self.cancelled:
                        return
        finally:
            self.reconnects += getattr(stream, "reconnects", 0)
        self._run_active = False
        if not terminal and not self.cancelled:
            raise APIConnectionError("The event stream ended before the run finished.")

    def _feed_streamable_tool(self, event: Any) -> None:
        if event.type not in (EventType.TOOL_CALL_ARGS, EventType.TOOL_CALL_END):
            return
        call = self.snapshot.tool_call(event.tool_call_id)
        tool = self._client.get_tool(call.name) if call else None
        if tool is None or not tool.streamable:
            return
        if event.type == EventType.TOOL_CALL_ARGS:
            tool.stream_partial(event.tool_call_id, call.arguments)  # type: ignore[union-attr]
        else:
            tool.finish_streaming(event.tool_call_id)

    def _cancel_on_server(self) -> None:
        with self._lock:
            if not self._run_active or self.thread_id is None or self.run_id is None:
                return
            self._run_active = False
            thread_id, run_id = self.thread_id, self.run_id
        try:
            self._client.runs.cancel(thread_id, run_id)
        except (NotFoundError, ConflictError):
            pass  # the run already ended (closing the stream may have cancelled it first)
        except APIError as exc:
            logger.warning("could not cancel run %s: %s", run_id, exc)
