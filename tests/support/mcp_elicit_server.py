"""A real MCP server whose tools ask the user for input, built on the `mcp` package's MCPServer.

`python tests/support/mcp_elicit_server.py --port N [--legacy]` serves streamable HTTP at
http://127.0.0.1:N/mcp. By default it speaks the newest revision (2026-07-28, stateless), where a tool
asks by returning an `input_required` result and reads the answer from the retried call; with
`--legacy` its `server/discover` names only handshake-era versions, so clients fall back to a
session-era connection (2025-11-25), where the tool's `ctx.elicit(...)` asks during the call.
Each tool call is appended to `MCP_TEST_CALL_LOG` (when set) as a JSON line, so tests can count them.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

from mcp.server.mcpserver import Context, MCPServer
from mcp_types import ElicitRequest, ElicitRequestFormParams, InputRequiredResult
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel

from mcp_legacy import legacy_only  # a sibling: this file runs as a script

server = MCPServer("tambo-elicit-server", log_level="WARNING")


class Seats(BaseModel):
    seats: int


class Note(BaseModel):
    note: str


SEATS_SCHEMA = {"type": "object", "properties": {"seats": {"type": "integer"}}, "required": ["seats"]}
NOTE_SCHEMA = {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]}


def _log(tool: str, ctx: Context, **extra) -> None:
    path = os.environ.get("MCP_TEST_CALL_LOG")
    if path:
        with open(path, "a") as log:
            log.write(json.dumps({"tool": tool, "era": ctx.protocol_version, **extra}) + "\n")


def _modern(ctx: Context) -> bool:
    return ctx.protocol_version in MODERN_PROTOCOL_VERSIONS


def _ask(key: str, message: str, schema: dict) -> InputRequiredResult:
    return InputRequiredResult(input_requests={key: ElicitRequest(params=ElicitRequestFormParams(
        message=message, requested_schema=schema))})


@server.tool(description="Book seats for a show; asks the user how many.")
async def book(show: str, ctx: Context) -> str | InputRequiredResult:
    _log("book", ctx, show=show)
    if _modern(ctx):
        answer = (ctx.input_responses or {}).get("seats")
        if answer is None:
            return _ask("seats", f"How many seats for {show}?", SEATS_SCHEMA)
        action, content = answer.action, answer.content or {}
    else:
        result = await ctx.elicit(f"How many seats for {show}?", Seats)
        action, content = result.action, (result.data.model_dump() if result.action == "accept" else {})
    if action == "accept":
        return f"Booked {content['seats']} seats for {show}."
    return f"Nothing booked for {show}: the user chose {action}."


@server.tool(description="Book seats, then ask for a note for the booking (two questions).")
async def book_with_note(show: str, ctx: Context) -> str | InputRequiredResult:
    _log("book_with_note", ctx, show=show)
    if _modern(ctx):
        # Each retry carries only the latest round's answers: the first answer rides in request_state.
        responses = ctx.input_responses or {}
        state = ctx.request_state
        if state is None and "seats" not in responses:
            return _ask("seats", f"How many seats for {show}?", SEATS_SCHEMA)
        if state is None or "note" not in responses:
            seats = json.loads(state)["seats"] if state else responses["seats"].content["seats"]
            return InputRequiredResult(input_requests={"note": ElicitRequest(params=ElicitRequestFormParams(
                message="A note for the booking?", requested_schema=NOTE_SCHEMA))},
                request_state=json.dumps({"seats": seats}))
        return f"Booked {json.loads(state)['seats']} seats for {show}, note: {responses['note'].content['note']}."
    seats = await ctx.elicit(f"How many seats for {show}?", Seats)
    note = await ctx.elicit("A note for the booking?", Note)
    return f"Booked {seats.data.seats} seats for {show}, note: {note.data.note}."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    parser.add_argument("--legacy", action="store_true")
    args = parser.parse_args()
    if args.legacy:
        legacy_only(server)
    print("serving", file=sys.stderr)
    server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
