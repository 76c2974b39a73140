"""The OpenAPI description of the run endpoints: plain async Django views that stream SSE, which
drf-spectacular cannot see, described from the same wire models the views parse. Assembled into the
/v1 document by tambo_project/openapi.py.
"""
from __future__ import annotations

from typing import Any

from ag_ui.core import RunAgentInput
from pydantic import BaseModel
from pydantic.json_schema import model_json_schema

from clientsdk import wire
from core.openapi import PROBLEM_REF, SECURITY, add_model, path_param, problem
from core.problems import PROBLEM_CONTENT_TYPE
from runs import bodies

AG_UI_EVENTS = """\
The answer is a stream of [AG-UI](https://docs.ag-ui.com) events, one per SSE message: a line
`id: <n>` (1, 2, 3 … per run: the id to resume after, docs/protocol.md#resumable-runs), a line `data: <json>`, and a
blank line. Every event has `type` and `timestamp` (epoch milliseconds).

- `RUN_STARTED {threadId, runId}`: always first.
- `TEXT_MESSAGE_START {messageId, role: "assistant"}`, `TEXT_MESSAGE_CONTENT {messageId, delta}`…,
  `TEXT_MESSAGE_END {messageId}`; `messageId` is the stored `msg_` id.
- `TOOL_CALL_START {toolCallId, toolCallName, parentMessageId}`, `TOOL_CALL_ARGS {toolCallId, delta}`…,
  `TOOL_CALL_END {toolCallId}`: the model calls a tool.
- `TOOL_CALL_RESULT {messageId, toolCallId, content, role: "tool"}`: a server tool's result.
- `CUSTOM {name, value}` with `name` one of `tambo.component.start {messageId, componentId, componentName}`,
  `tambo.component.props_delta {componentId, operations}` (RFC 6902 JSON Patch),
  `tambo.component.end {componentId}`, and `tambo.run.awaiting_input {pendingToolCalls: [{toolCallId,
  toolName, arguments}], inputRequests?}` when the model called client tools, or an MCP tool asked the
  user for input (`inputRequests: [{toolCallId, serverName, toolName, mcpToolCallId, message, mode,
  requestedSchema?, url?}]`, each also a pending `tambo_mcp_input` call): answer them in a new run with
  `previousRunId` and `tool_result` blocks.
- Last, exactly one of `RUN_FINISHED {threadId, runId}` or
  `RUN_ERROR {message, code, category: "client_error"|"server_error", isRetryable}`
  (`code` `CANCELLED` after a cancel).
"""

_STREAM_EXAMPLE = (
    'id: 1\ndata: {"type":"RUN_STARTED","threadId":"thr_…","runId":"run_…","timestamp":1700000000000}\n\n'
    'id: 2\ndata: {"type":"TEXT_MESSAGE_START","messageId":"msg_…","role":"assistant","timestamp":1700000000001}\n\n'
    'id: 3\ndata: {"type":"TEXT_MESSAGE_CONTENT","messageId":"msg_…","delta":"Hello","timestamp":1700000000002}\n\n'
    'id: 4\ndata: {"type":"TEXT_MESSAGE_END","messageId":"msg_…","timestamp":1700000000003}\n\n'
    'id: 5\ndata: {"type":"RUN_FINISHED","threadId":"thr_…","runId":"run_…","timestamp":1700000000004}\n\n'
)

RUN_EVENTS = """\
The run's events (docs/protocol.md#resumable-runs), exactly as its own stream sent them, `id:` lines included:
those after the id in the `Last-Event-ID` header (or `?after=`; neither: all of them), then the live
ones as the run produces them, until its last event (`RUN_FINISHED` or `RUN_ERROR`). Any number of
readers, on any server process. A finished run can be replayed for `RUN_REPLAY_SECONDS` (300) after
it ended. A reader that falls more than `RUN_EVENTS_BUFFER_BYTES` behind the run is cut: its last
event is `CUSTOM tambo.stream.lagged {lastEventId}` (with no `id:`), and it can resume after that id.
"""


def _run_operation(operation_id: str, summary: str, body_ref: dict, headers: dict[str, Any],
                   parameters: list[dict]) -> dict[str, Any]:
    return {
        "operationId": operation_id,
        "summary": summary,
        "tags": ["runs"],
        "parameters": parameters,
        "requestBody": {"required": True, "content": {"application/json": {"schema": body_ref}}},
        "security": SECURITY,
        "responses": {
            "200": {
                "description": AG_UI_EVENTS,
                "headers": headers,
                "content": {"text/event-stream": {"schema": {"type": "string"}, "example": _STREAM_EXAMPLE}},
            },
            "202": {"description": "A background run (`background: true`, or `Prefer: respond-async`): started, "
                                   "answered at once; read its events at `eventsUrl` "
                                   "(docs/protocol.md#background-runs).",
                    "headers": {**headers, "Location": {"description": "The run's URL.", "schema": {"type": "string"}}},
                    "content": {"application/json": {"schema": {"$ref": "#/components/schemas/RunInfo"}}}},
            **{status: problem(status) for status in ("400", "401", "404", "409", "413", "500", "503")},
        },
    }


def run_paths(components: dict[str, Any]) -> dict[str, Any]:
    run_id_header = {"description": "The new run's id.", "schema": {"type": "string"}}
    thread_id = path_param("threadId", "The thread's id (`thr_…`).")
    cancel_ref = add_model(components, wire.CancelResult)
    run_ref = add_model(components, wire.RunInfo)
    return {
        "/v1/threads/runs": {"post": _run_operation(
            "threadsRunsCreateWithThread",
            "Create a thread and start a run on it",
            add_model(components, bodies.CreateThreadWithRunBody),
            {"X-Thread-Id": {"description": "The new thread's id.", "schema": {"type": "string"}},
             "X-Run-Id": run_id_header},
            [],
        )},
        "/v1/threads/{threadId}/runs": {"post": _run_operation(
            "threadsRunsCreate",
            "Start a run on a thread",
            add_model(components, bodies.CreateRunBody),
            {"X-Run-Id": run_id_header},
            [thread_id],
        )},
        "/v1/threads/{threadId}/runs/{runId}": {"get": {
            "operationId": "threadsRunsRetrieve",
            "summary": "A run's status (docs/protocol.md#background-runs)",
            "tags": ["runs"],
            "parameters": [thread_id, path_param("runId", "The run's id (`run_…`)."), _USER_KEY],
            "security": SECURITY,
            "responses": {
                "200": {"description": "The run.", "content": {"application/json": {"schema": run_ref}}},
                "400": problem("400"),
                "401": problem("401"),
                "404": {"description": "No such run on this user's thread (`RUN_NOT_FOUND`).",
                        "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}},
                "500": problem("500"),
                "503": problem("503"),
            },
        }, "delete": {
            "operationId": "threadsRunsCancel",
            "summary": "Cancel the thread's active run",
            "tags": ["runs"],
            "parameters": [
                thread_id,
                path_param("runId", "The active run's id (`run_…`)."),
                {"name": "userKey", "in": "query", "required": False, "schema": {"type": "string"},
                 "description": "The end user the call acts for; required unless a bearer access token "
                                "names it."},
            ],
            "security": SECURITY,
            "responses": {
                "200": {"description": "The run was cancelled: its partial message and its end are stored, "
                                       "so every read after this answer sees them; its stream ends with "
                                       "`RUN_ERROR {code: \"CANCELLED\"}`.",
                        "content": {"application/json": {"schema": cancel_ref}}},
                "202": {"description": "The cancel is recorded but the run had not ended within "
                                       "`RUN_CANCEL_WAIT_SECONDS` (status `cancelling`).",
                        "content": {"application/json": {"schema": cancel_ref}}},
                "400": problem("400"),
                "401": problem("401"),
                "404": {"description": "No such thread for this userKey (`THREAD_NOT_FOUND`), or that run is "
                                       "not the thread's active run (`RUN_NOT_FOUND`).",
                        "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}},
                "500": problem("500"),
                "503": problem("503"),
            },
        }},
    }


_USER_KEY = {"name": "userKey", "in": "query", "required": False, "schema": {"type": "string"},
             "description": "The end user the call acts for; required unless a bearer access token names it."}

THREAD_EVENTS = """\
The thread's live stream (docs/protocol.md#the-live-thread-stream), open for as long as the client keeps
it: `MESSAGES_SNAPSHOT {threadId, messages}` (the stored messages, as `GET /v1/threads/{threadId}` shows
them, less what a run in progress produced so far), `CUSTOM tambo.thread.updated {value: Thread}`, then
every /v1 run of the thread from any client or process, each from `RUN_STARTED` to its end, with ids
`<runId>:<seq>` (a run that starts after the join comes after a new `MESSAGES_SNAPSHOT`), and whenever they
happen `CUSTOM tambo.thread.updated` (a rename) and `CUSTOM tambo.component.state {messageId,
componentId, state}`. `Last-Event-ID: <runId>:<seq>` resumes after that event with no snapshot while
the runs can be replayed.
"""


def thread_events_path() -> dict[str, Any]:
    last_event_id = {"name": "Last-Event-ID", "in": "header", "required": False,
                     "schema": {"type": "string", "pattern": "^run_[A-Za-z0-9_-]+:[0-9]+$"},
                     "description": "The id of the last run event the client got (`<runId>:<seq>`)."}
    return {"/v1/threads/{threadId}/events": {"get": {
        "operationId": "threadsEvents",
        "summary": "Follow a thread live: its runs, renames and component states",
        "tags": ["threads"],
        "parameters": [path_param("threadId", "The thread's id (`thr_…`)."), _USER_KEY, last_event_id],
        "security": SECURITY,
        "responses": {
            "200": {"description": THREAD_EVENTS, "content": {"text/event-stream": {"schema": {"type": "string"}}}},
            "400": {"description": "A `Last-Event-ID` that is not `<runId>:<seq>` (`VALIDATION_ERROR`).",
                    "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}},
            "401": problem("401"),
            "404": {"description": "No such thread for this user (`THREAD_NOT_FOUND`).",
                    "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}},
            "500": problem("500"),
            "503": problem("503"),
        },
    }}}


def run_events_path() -> dict[str, Any]:
    user_key = {"name": "userKey", "in": "query", "required": False, "schema": {"type": "string"},
                "description": "The end user the call acts for; required unless a bearer access token names it."}
    after = {"name": "after", "in": "query", "required": False, "schema": {"type": "integer", "minimum": 0},
             "description": "Replay the events after this id (the `Last-Event-ID` header wins)."}
    last_event_id = {"name": "Last-Event-ID", "in": "header", "required": False,
                     "schema": {"type": "string", "pattern": "^[0-9]+$"},
                     "description": "The id of the last event the client got (an SSE client sends it on reconnecting)."}
    return {"/v1/threads/{threadId}/runs/{runId}/events": {"get": {
        "operationId": "threadsRunsEvents",
        "summary": "Replay a run's events, then follow it live",
        "tags": ["runs"],
        "parameters": [path_param("threadId", "The thread's id (`thr_…`)."),
                       path_param("runId", "The run's id (`run_…`)."), user_key, after, last_event_id],
        "security": SECURITY,
        "responses": {
            "200": {"description": RUN_EVENTS,
                    "headers": {"X-Run-Id": {"description": "The run's id.", "schema": {"type": "string"}}},
                    "content": {"text/event-stream": {"schema": {"type": "string"}, "example": _STREAM_EXAMPLE}}},
            "400": {"description": "`Last-Event-ID` or `after` is not a whole number, or is past the run's last "
                                   "event (`VALIDATION_ERROR`, with `lastEventId` then).",
                    "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}},
            "401": problem("401"),
            "404": {"description": "No such run on this user's thread, or it ended more than "
                                   "`RUN_REPLAY_SECONDS` ago (`RUN_NOT_FOUND`).",
                    "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}},
            "500": problem("500"),
            "503": problem("503"),
        },
    }}}


AG_UI_PREFIX = "AgUi"

AG_UI_ENDPOINT = """\
An [AG-UI](https://docs.ag-ui.com) agent endpoint (docs/protocol.md#the-ag-ui-endpoint): the body is AG-UI's
`RunAgentInput`, the end user `forwardedProps.userKey` (or a bearer token's user). `threadId` is the
client's own conversation id (created on first use, per user) or a server thread id `thr_…`. Messages
already stored are skipped; new user messages are the turn; `tool` messages answer the pending calls;
`tools` are client tools; `context` and `state` reach the model (an absent or empty `state` keeps the
thread's stored one). `protocolVersion` picks the events' version: absent is 0.0.x. At most
`AGUI_MAX_MESSAGES` messages (413 beyond). Components are a /v1 feature and are not offered here.
"""

AG_UI_EVENTS_PLAIN = """\
A stream of plain AG-UI events, one per SSE message (`id: <n>`, `data: <json>` and a blank line; the ids
number this stream's events, which the /v1 events route does not replay), that passes
`@ag-ui/client`'s verification: `RUN_STARTED {threadId, runId}` with the client's ids, then
`STATE_SNAPSHOT {snapshot}` (the thread's stored state), `TEXT_MESSAGE_START` / `TEXT_MESSAGE_CONTENT` /
`TEXT_MESSAGE_END`, `TOOL_CALL_START` / `TOOL_CALL_ARGS` / `TOOL_CALL_END`, `TOOL_CALL_RESULT` for server
tools, and last exactly one `RUN_FINISHED {threadId, runId, outcome?}` (to a 1.0 client, a client tool
call ends the run with `outcome: {type: "success", pendingToolCallIds}`, an MCP tool's request for input
with `outcome: {type: "interrupt", interrupts}`, answered by `resume` entries; a 0.0.x client gets no
`outcome`, and reasoning as `THINKING_*` instead of `REASONING_*`) or `RUN_ERROR {message, code}`. No
`CUSTOM` events. The server's own ids are in the `X-Thread-Id` and `X-Run-Id` headers.
"""


def _add_ag_ui_model(components: dict[str, Any], model: type[BaseModel]) -> dict[str, str]:
    """Adds an `ag_ui.core` model under prefixed names: AG-UI's `Message`, `Tool`… are not the wire's."""
    template = f"#/components/schemas/{AG_UI_PREFIX}{{model}}"
    schema = model_json_schema(model, ref_template=template, mode="validation")
    for name, sub_schema in schema.pop("$defs", {}).items():
        components[AG_UI_PREFIX + name] = sub_schema
    components[AG_UI_PREFIX + model.__name__] = schema
    return {"$ref": f"#/components/schemas/{AG_UI_PREFIX}{model.__name__}"}


def agui_path(components: dict[str, Any]) -> dict[str, Any]:
    operation = _run_operation(
        "aguiRun", "Run an AG-UI agent turn on the client's thread", _add_ag_ui_model(components, RunAgentInput),
        {"X-Thread-Id": {"description": "The server's thread id (`thr_…`).", "schema": {"type": "string"}},
         "X-Run-Id": {"description": "The server's run id (`run_…`).", "schema": {"type": "string"}}},
        [],
    )
    operation["tags"] = ["ag-ui"]
    del operation["responses"]["202"]  # AG-UI runs always stream
    operation["description"] = AG_UI_ENDPOINT
    operation["responses"]["200"]["description"] = AG_UI_EVENTS_PLAIN
    operation["responses"]["404"] = {
        "description": "A `thr_…` threadId that is not this user's (`THREAD_NOT_FOUND`).",
        "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}}
    operation["responses"]["413"] = {
        "description": "The body is over `MAX_REQUEST_BYTES`, or the history over `AGUI_MAX_MESSAGES` "
                       "(`PAYLOAD_TOO_LARGE`).",
        "content": {PROBLEM_CONTENT_TYPE: {"schema": PROBLEM_REF}}}
    return {"/v1/agui": {"post": operation}}
