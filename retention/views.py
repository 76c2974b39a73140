"""`DELETE /v1/users/{userKey}?project=NAME`: forget one end user of a project (retention/forget.py).

`userKey` is the user as stored and shown in the admin: an API caller's `userKey` as sent, a token
user as `token:<sub>`, a page login as `login:<id>` (projects/identities.py). Only the admin's staff
may call it (projects.auth.staff_resolve); `manage.py forget_user` does the same from a shell.
"""
from __future__ import annotations

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_http_methods

from core.db import db_call
from core.problems import Problem
from projects.auth import staff_resolve
from projects.models import Project
from retention.forget import user_forget


@csrf_exempt  # staff_resolve checks the CSRF token itself, answering in this route's shape
@require_http_methods(["DELETE"])
async def user_forget_view(request: HttpRequest, user_key: str) -> HttpResponse:
    report = await db_call(_forget, request, user_key)
    if report["threadsBusy"]:
        # Everything else went; the busy threads go on the next call, once their runs ended.
        raise Problem(409, "RUN_ACTIVE", f"{report['threadsBusy']} of the user's threads have a live run; call "
                                         "again once it ended.", removed=report, retryAfter=5)
    return JsonResponse({"userKey": user_key, "removed": report})


def _forget(request: HttpRequest, user_key: str) -> dict[str, int]:
    staff_resolve(request)
    name = request.GET.get("project", "")
    project = Project.objects.filter(name=name).first() if name else None
    if project is None:
        raise Problem(404, "PROJECT_NOT_FOUND", "Name the project: ?project=NAME (an existing project's name).")
    return user_forget(project=project, user_key=user_key)
