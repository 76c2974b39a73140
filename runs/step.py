"""One model step: provider deltas in, AG-UI events out, and the assistant message it leaves.

Pure bookkeeping with no I/O, so the advance loop stays short and this is easy to test alone.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Iterator

from ag_ui.core import (BaseEvent, CustomEvent, TextMessageEndEvent, TextMessageStartEvent, ToolCallArgsEvent,
                        ToolCallEndEvent, ToolCallStartEvent)

from clientsdk import wire
from core.ids import new_id
from providers.base import ReasoningBlock, ReasoningDelta, TextDelta, ToolCallDelta
from runs.carry import Carried, CarriedCall, Echo
from runs.reasoning import Reasoning
from runs.stream.sse import text_content
from runs.toolbox import Toolbox
from tools.props_stream import PropsStream


@dataclass
class Call:
    id: str
    name: str
    kind: str | None
    component_id: str | None = None
    props: PropsStream | None = None
    final_props: dict[str, Any] | None = None
    # A call the client saw start before a takeover (runs/carry.py): its arguments seen, to skip.
    echo: Echo | None = None
    carried_ended: bool = False
    # The arguments' fragments, joined once when read: `+=` on a growing string copies all of it
    # per fragment, quadratic in the argument's size (a 243 KB argument in 8-byte pieces took a second).
    _fragments: list[str] = field(default_factory=list)

    @property
    def arguments(self) -> str:
        if len(self._fragments) > 1:
            self._fragments[:] = ["".join(self._fragments)]
        return self._fragments[0] if self._fragments else ""

    @arguments.setter
    def arguments(self, value: str) -> None:
        self._fragments[:] = [value] if value else []

    def add_arguments(self, fragment: str) -> None:
        self._fragments.append(fragment)

    def parsed_arguments(self) -> tuple[dict[str, Any] | None, str | None]:
        """(arguments, None) or (None, why they are unusable)."""
        try:
            value = json.loads(self.arguments or "{}")
        except json.JSONDecodeError:
            return None, "The tool call's arguments are not valid JSON."
        if not isinstance(value, dict):
            return None, "The tool call's arguments must be a JSON object."
        return value, None


@dataclass
class Step:
    message_id: str
    toolbox: Toolbox
    text_open: bool = False
    calls: dict[int, Call] = field(default_factory=dict)
    finish_reason: str | None = None
    # Text accumulates as parts joined once when read: `+=` on a long answer would copy it per delta.
    _text_parts: list[str] = field(default_factory=list)
    reasoning: Reasoning = field(default_factory=Reasoning)
    # The provider's whole reasoning blocks (Anthropic's signed thinking), in order: stored with the
    # message and sent back with its tool calls, never shown.
    reasoning_blocks: list[dict[str, Any]] = field(default_factory=list)
    # A step carried on after a takeover (runs/carry.py): the text seen, which the model may repeat,
    # and the tool calls seen, which its first calls take over when they are the same.
    _echo: Echo | None = None
    _trim: bool = False
    _carried_calls: list[CarriedCall] = field(default_factory=list)

    def carry(self, carried: Carried) -> None:
        """Makes this step the continuation of the step in flight its client saw before a takeover."""
        if carried.message_id:
            self.message_id = carried.message_id
        if carried.text:
            self._text_parts[:] = [carried.text]
            self._echo = Echo(carried.text)
            self._trim = carried.text[-1].isspace()  # the prefill left it out; the model's own comes back
        self.text_open = carried.text_open
        self.reasoning.blocks = [[text] for text in carried.reasoning]
        self._carried_calls = list(carried.calls)

    @property
    def text(self) -> str:
        if len(self._text_parts) > 1:
            self._text_parts[:] = ["".join(self._text_parts)]
        return self._text_parts[0] if self._text_parts else ""

    def on_delta(self, delta: TextDelta | ReasoningDelta | ReasoningBlock | ToolCallDelta) -> Iterator[BaseEvent]:
        if isinstance(delta, ReasoningBlock):
            self.reasoning_blocks.append(delta.block)
            return
        if isinstance(delta, ReasoningDelta):
            yield from self.reasoning.feed(delta.text, delta.block)
            return
        if isinstance(delta, TextDelta):
            text = delta.text
            if self._echo is not None:
                text = self._echo.feed(text)
                if text is None:
                    return
                if self._trim and not self._echo.matched:
                    text = text.lstrip()
                self._echo = None
            if not text:
                return
            # The hot path, inline (_text_out for the rare held text).
            yield from self.reasoning.close()
            if not self.text_open:
                self.text_open = True
                yield TextMessageStartEvent(message_id=self.message_id, role="assistant")
            self._text_parts.append(text)
            # Validated already (a non-empty str): the hot path skips pydantic altogether.
            yield text_content(self.message_id, text)
            return
        call = self.calls.get(delta.index)
        if call is None:
            yield from self._echo_flush()
            yield from self.reasoning.close()
            yield from self._close_text()
            name = delta.name or ""
            call = Call(id=delta.id or new_id("call"), name=name, kind=self.toolbox.kind(name))
            self.calls[delta.index] = call
            carried = self._carried_calls.pop(0) if self._carried_calls else None
            if carried is not None and (carried.name != name or call.kind == "component"):
                self._carried_calls.clear()  # the model went another way: the calls seen stay as they were
                carried = None
            if carried is not None:
                # The call the client saw start: the same call, under the id the client knows.
                call.id, call.echo, call.carried_ended = carried.id, Echo(carried.arguments), carried.ended
            elif call.kind == "component":
                call.component_id = new_id("comp")
                call.props = PropsStream()
                yield CustomEvent(name=wire.COMPONENT_START, value={
                    "messageId": self.message_id, "componentId": call.component_id,
                    "componentName": self.toolbox.components[name].name})
            else:
                yield ToolCallStartEvent(tool_call_id=call.id, tool_call_name=name,
                                         parent_message_id=self.message_id)
        if not delta.arguments:
            return
        call.add_arguments(delta.arguments)
        if call.props is not None:
            operations = call.props.feed(delta.arguments)
            if operations:
                yield CustomEvent(name=wire.COMPONENT_PROPS_DELTA,
                                  value={"componentId": call.component_id, "operations": operations})
        elif call.echo is not None:
            new = call.echo.feed(delta.arguments)
            if new is not None:
                yield from self._call_carried_on(call, new)
        else:
            yield ToolCallArgsEvent(tool_call_id=call.id, delta=delta.arguments)

    def _text_out(self, text: str) -> Iterator[BaseEvent]:
        if not text:
            return
        yield from self.reasoning.close()
        if not self.text_open:
            self.text_open = True
            yield TextMessageStartEvent(message_id=self.message_id, role="assistant")
        self._text_parts.append(text)
        yield text_content(self.message_id, text)

    def _echo_flush(self) -> Iterator[BaseEvent]:
        if self._echo is not None:
            held, self._echo = self._echo.flush(), None
            yield from self._text_out(held)

    def _call_carried_on(self, call: Call, new: str) -> Iterator[BaseEvent]:
        """A carried call's arguments once they differ from or go beyond those seen: the rest when they
        go on from them, else the whole call again under a new id (the one seen stays in the client's
        view, without an end: its arguments are not whole, and the official client would fail to parse them)."""
        echo, call.echo = call.echo, None
        if echo.matched and not (call.carried_ended and new):
            if new:
                yield ToolCallArgsEvent(tool_call_id=call.id, delta=new)
            return
        call.id, call.carried_ended = new_id("call"), False
        yield ToolCallStartEvent(tool_call_id=call.id, tool_call_name=call.name, parent_message_id=self.message_id)
        if call.arguments:
            yield ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments)

    def _close_text(self) -> Iterator[BaseEvent]:
        if self.text_open:
            self.text_open = False
            yield TextMessageEndEvent(message_id=self.message_id)

    def finish(self) -> Iterator[BaseEvent]:
        """Closes what is open once the model's step has ended."""
        yield from self._echo_flush()
        yield from self.reasoning.close()
        yield from self._close_text()
        for call in self.calls.values():
            if call.echo is not None:  # its arguments stopped short of those seen: another call
                yield from self._call_carried_on(call, call.echo.flush())
            if call.props is None:
                if call.carried_ended:
                    continue  # the client saw it end, with these very arguments
                if not call.arguments:
                    # The official client parses the accumulated arguments at the end: give it "{}".
                    call.arguments = "{}"
                    yield ToolCallArgsEvent(tool_call_id=call.id, delta="{}")
                yield ToolCallEndEvent(tool_call_id=call.id)
                continue
            try:
                call.final_props, operations = call.props.finish()
            except ValueError:
                call.final_props, operations = call.props.props, []
            if operations:
                yield CustomEvent(name=wire.COMPONENT_PROPS_DELTA,
                                  value={"componentId": call.component_id, "operations": operations})
            yield CustomEvent(name=wire.COMPONENT_END, value={"componentId": call.component_id})

    def cancel(self) -> None:
        """Freezes a cancelled step: components keep the props seen so far."""
        for call in self.calls.values():
            if call.props is not None and call.final_props is None:
                call.final_props = call.props.props

    def content(self) -> list[dict[str, Any]]:
        blocks: list[dict[str, Any]] = [{"type": "text", "text": self.text}] if self.text else []
        for call in self.calls.values():
            if call.props is not None:
                blocks.append({"type": "component", "id": call.component_id,
                               "name": self.toolbox.components[call.name].name,
                               "props": call.final_props or {}, "state": {}, "toolCallId": call.id})
            else:
                arguments, _ = call.parsed_arguments()
                blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments or {}})
        return blocks

    def model_message(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"role": "assistant", "content": self.text or None}
        if self.calls:
            entry["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {
                    "name": c.name,
                    "arguments": json.dumps(c.final_props) if c.props is not None else (c.arguments or "{}")}}
                for c in self.calls.values()
            ]
            if self.reasoning_blocks:
                entry["thinking_blocks"] = list(self.reasoning_blocks)
        return entry
