"""A run request's start in one database call: the caller (the project key and its tools read in one
statement), the body, and `services.run_start` (the lock taken, the input stored), all on one
database worker thread. One crossing instead of two: a start under load waits for a database thread
once (docs/performance.md, 50 starts at once).
"""
from __future__ import annotations

from dataclasses import dataclass

from clientsdk import wire
from core.input_guard import request_json
from core.validation import parse_body
from projects.auth import Principal, caller_resolve
from projects.statements import KeyLookup
from runs import bodies, services
from runs.attachments import body_has_resources, check_part_counts
from tools.selectors import ProjectTools
from tools.statements import tool_columns, tools_of_values

# The key lookup with the key's project's server tools in the same statement: a new thread's run
# then needs no statement for its tools (an existing thread's lock reads them with the thread).
_KEY_AND_TOOLS = KeyLookup(extra=tool_columns)


def _caller(request) -> tuple[Principal, ProjectTools | None]:
    """The principal of the request (projects/auth.py, the one resolution), and its project's tools
    when the key lookup read them."""
    caller = caller_resolve(request, lookup=_KEY_AND_TOOLS)
    return caller.principal, tools_of_values(caller.key_extra) if caller.key_extra is not None else None


@dataclass(frozen=True)
class ContentToCheck:
    """A parsed request whose images or files must be checked (runs/attachments.py, async: it may ask
    an MCP server) before `services.run_start`; nothing was started."""

    principal: Principal
    body: wire.CreateRunBody
    tools: ProjectTools | None


def run_start_request(*, request, thread_id: str | None) -> services.StartedRun | ContentToCheck:
    """Authenticates the request, parses its body and starts the run (services.run_start), in that
    order, so the answers are those of the separate steps: 401 before 400 before 404/409. A body
    with resource parts is handed back unstarted (ContentToCheck) for the caller to check first."""
    principal, tools = _caller(request)
    model = bodies.CreateThreadWithRunBody if thread_id is None else bodies.CreateRunBody
    body = parse_body(model, request_json(request))
    check_part_counts(body)
    if body_has_resources(body):
        return ContentToCheck(principal=principal, body=body, tools=tools)
    return services.run_start(principal=principal, body=body, thread_id=thread_id, tools=tools)
