"""`POST /v1/agui`: a generic AG-UI client (`@ag-ui/client` HttpAgent…) drives a thread (docs/protocol.md#the-ag-ui-endpoint).

Decode and check the `RunAgentInput`, start the run through the same lock and storage as /v1, then
stream the same advance loop, its events mapped to plain AG-UI (runs/agui/protocol.py).
"""
from __future__ import annotations

import asyncio
from functools import partial

from ag_ui.core import RunAgentInput
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from core.input_guard import request_json
from core.validation import parse_body
from projects.auth import principal_aresolve
from runs.agui.protocol import agui_events, check_media, speaks_1_0
from runs.agui.services import agui_run_start
from runs.views import run_start_shielded, stream_run


@csrf_exempt
@require_http_methods(["POST"])
async def agui_run(request: HttpRequest) -> HttpResponse:
    principal = await principal_aresolve(request)
    run_input = parse_body(RunAgentInput, request_json(request))
    # Images and files checked before the lock, off the event loop, as /v1's (runs/attachments.py).
    await asyncio.to_thread(check_media, run_input)
    started = await run_start_shielded(agui_run_start, logged=False, principal=principal, run_input=run_input)
    response = stream_run(started, partial(agui_events, thread_id=run_input.thread_id, run_id=run_input.run_id,
                                           state=started.thread.agui_state, version_1_0=speaks_1_0(run_input)))
    # The server's own ids, as on /v1 (an AG-UI client ignores them; the REST API knows these).
    response["X-Thread-Id"] = started.thread.id
    return response
