"""`python -m clientsdk chat`: a terminal chat against a v1 server, with two local demo tools.

The answer streams as it is written; tool calls and their results are printed as they happen.
Ctrl-C while the model works cancels that run on the server and comes back to the prompt, in the
same thread; Ctrl-C or Ctrl-D at the prompt exits. The thread's id is printed, and `--thread-id`
resumes it later.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import random
import sys
from pathlib import Path
from typing import Any, TextIO

from ag_ui.core import EventType

from .snapshot import COMPONENT_END, COMPONENT_START, ThreadSnapshot
from .client import Client
from .errors import APIError, MaxStepsExceeded, RunError

__all__ = ["main", "local_time", "roll_dice"]


def local_time(timezone: str | None = None) -> str:
    """The current local date and time of this computer (ISO 8601), or in a UTC offset like "+02:00"."""
    now = datetime.datetime.now().astimezone()
    if timezone:
        sign = -1 if timezone.startswith("-") else 1
        hours, _, minutes = timezone.lstrip("+-").partition(":")
        offset = datetime.timedelta(hours=int(hours or 0), minutes=int(minutes or 0)) * sign
        now = now.astimezone(datetime.timezone(offset))
    return now.isoformat(timespec="seconds")


def roll_dice(sides: int = 6, count: int = 1) -> dict[str, Any]:
    """Roll `count` dice with `sides` sides each."""
    if not 1 <= count <= 100 or not 2 <= sides <= 1000:
        raise ValueError("count must be 1..100 and sides 2..1000")
    rolls = [random.randint(1, sides) for _ in range(count)]
    return {"rolls": rolls, "total": sum(rolls)}


def build_client(args: argparse.Namespace) -> Client:
    client = Client(args.base_url, args.api_key, args.user_key, timeout=args.timeout)
    client.register_tool("local_time", local_time, input_schema={
        "type": "object",
        "properties": {"timezone": {"type": "string", "description": 'UTC offset such as "+02:00"'}},
    })
    client.register_tool("roll_dice", roll_dice, input_schema={
        "type": "object",
        "properties": {"sides": {"type": "integer", "minimum": 2}, "count": {"type": "integer", "minimum": 1}},
    })
    return client


class _Printer:
    """Renders loop events on a terminal."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self.in_text = False

    def write(self, text: str) -> None:
        self.out.write(text)
        self.out.flush()

    def line(self, text: str) -> None:
        if self.in_text:
            self.write("\n")
            self.in_text = False
        self.write(text + "\n")

    def event(self, event: Any, snapshot: ThreadSnapshot) -> None:
        kind = event.type
        if kind == EventType.TEXT_MESSAGE_START:
            self.write("assistant> ")
            self.in_text = True
        elif kind == EventType.TEXT_MESSAGE_CONTENT:
            self.write(event.delta)
        elif kind == EventType.TEXT_MESSAGE_END and self.in_text:
            self.write("\n")
            self.in_text = False
        elif kind == EventType.TOOL_CALL_END:
            call = snapshot.tool_call(event.tool_call_id)
            if call is not None:
                self.line(f"[tool call] {call.name}({json.dumps(call.arguments)})")
        elif kind == EventType.TOOL_CALL_RESULT:
            call = snapshot.tool_call(event.tool_call_id)
            label = "tool error" if call and call.is_error else "tool result"
            name = call.name if call else event.tool_call_id
            self.line(f"[{label}] {name}: {call.result if call else event.content}")
        elif kind == EventType.CUSTOM and event.name == COMPONENT_START:
            self.line(f"[component] {event.value.get('componentName')} ...")
        elif kind == EventType.CUSTOM and event.name == COMPONENT_END:
            comp = snapshot.component(event.value.get("componentId", ""))
            if comp is not None:
                self.line(f"[component] {comp.name} {json.dumps(comp.props)}")
        elif kind == EventType.RUN_ERROR:
            self.line(f"[error] {event.code}: {event.message}")


def chat(client: Client, *, thread_id: str | None, inp: TextIO, out: TextIO, attach: list[str] | None = None) -> int:
    """The chat loop; `attach` (paths) go with the first message."""
    printer = _Printer(out)
    printer.line(f"Tambo chat on {client.base_url} (tools: {', '.join(client.tools)}). "
                 "Ctrl-C stops an answer; Ctrl-C or Ctrl-D at the prompt quits.")
    if thread_id:
        printer.line(f"[thread] {thread_id} (resumed)")
    while True:
        try:
            printer.write("you> ")
            text = inp.readline()
        except KeyboardInterrupt:
            printer.line("\nbye")
            return _goodbye(printer, thread_id)
        if not text:  # EOF (Ctrl-D)
            printer.line("bye")
            return _goodbye(printer, thread_id)
        text = text.strip()
        if not text:
            continue
        try:
            stream = client.run(text, thread_id=thread_id, attachments=attach or ())
        except (OSError, ValueError) as exc:
            printer.line(f"[error] cannot attach: {exc}")
            continue
        if attach:
            printer.line(f"[attached] {', '.join(Path(name).name for name in attach)}")
            attach = None
        try:
            for event, snapshot in stream:
                if thread_id is None and stream.thread_id:
                    thread_id = stream.thread_id
                    printer.line(f"[thread] {thread_id} (resume it with --thread-id {thread_id})")
                printer.event(event, snapshot)
        except KeyboardInterrupt:
            # The server answers the cancel once the partial answer and the run's end are stored, so
            # the next message follows the cancelled run at once (docs/protocol.md#the-event-stream).
            stream.cancel()
            printer.line("[cancelled] the answer was stopped; the conversation goes on")
            thread_id = stream.thread_id or thread_id
            continue
        except MaxStepsExceeded as exc:
            printer.line(f"[stopped] {exc}")
        except RunError:
            pass  # the RUN_ERROR event was printed as it came
        except APIError as exc:
            printer.line(f"[error] {exc}")
        thread_id = stream.thread_id or thread_id


def _goodbye(printer: _Printer, thread_id: str | None) -> int:
    if thread_id:
        printer.line(f"[thread] {thread_id}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m clientsdk", description="Tambo v1 client tools")
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("chat", help="chat in the terminal, with local demo tools")
    p.add_argument("--base-url", default=os.environ.get("TAMBO_BASE_URL", "http://localhost:8000"))
    p.add_argument("--api-key", default=os.environ.get("TAMBO_API_KEY"))
    p.add_argument("--user-key", default=os.environ.get("TAMBO_USER_KEY", os.environ.get("USER", "cli-user")))
    p.add_argument("--thread-id", default=None, help="continue this thread instead of starting a new one")
    p.add_argument("--timeout", type=float, default=120.0)
    p.add_argument("--attach", action="append", default=[], metavar="FILE",
                   help="send this image or file with the first message (repeatable)")
    args = parser.parse_args(argv)
    if not args.api_key:
        parser.error("--api-key (or TAMBO_API_KEY) is required")
    with build_client(args) as client:
        return chat(client, thread_id=args.thread_id, inp=sys.stdin, out=sys.stdout, attach=args.attach)
