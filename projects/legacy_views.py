"""The older routes `@tambo-ai/typescript-sdk` still exposes outside `/v1` (docs/protocol.md#cors-and-paths-outside-v1).

`GET /projects` (the SDK's `beta.projects.getCurrent()`) answers the caller's project, found by the one
caller resolution. The rest belong to Tambo's hosted service (its dashboard, component registry, hosted
MCP server and storage): they answer a 404 problem that names what this server offers instead, so the
SDK shows a sentence, not an HTML page.
"""
from __future__ import annotations

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET

from core.problems import Problem
from projects.auth import principal_resolve
from projects.config import project_settings


@require_GET
def project_current(request: HttpRequest) -> JsonResponse:
    """The project of the caller's key (or token or session), in the SDK's `ProjectGetCurrentResponse` shape."""
    project = principal_resolve(request).project
    settings = project_settings(project)
    answer = {
        "id": project.id,
        "name": project.name,
        "isTokenRequired": settings.token_required,
        "providerType": "llm",
        # The SDK's field names the owning dashboard user; a project here has members, not one owner.
        "userId": "",
        "allowSystemPromptOverride": settings.allow_system_prompt_override,
        "customInstructions": project.system_prompt,
    }
    if settings.models:
        answer["defaultLlmProviderName"] = settings.models[0].provider
        answer["defaultLlmModelName"] = settings.models[0].model
    if settings.max_input_tokens:
        answer["maxInputTokens"] = settings.max_input_tokens
    return JsonResponse(answer)


# Path prefix -> what the caller should use instead (each a 404 problem `NOT_FOUND`).
INSTEAD = {
    "/projects/": "Projects and their keys are managed in this server's admin (/admin/) and with "
                  "`manage.py createapikey`; GET /projects answers the caller's own project.",
    "/registry/": "This server has no component registry: register components in the app "
                  "(TamboProvider's `components`).",
    "/storage/presign": "This server stores no uploads: send images and files inline in the message "
                        "(docs/images-and-voice.md).",
}


@csrf_exempt
def not_served(request: HttpRequest, rest: str = "") -> JsonResponse:
    """A hosted-service route of the SDK: 404 NOT_FOUND with the alternative in `detail`."""
    path = request.path
    instead = next((text for prefix, text in INSTEAD.items() if path.startswith(prefix) or path == prefix.rstrip("/")),
                   "This route belongs to Tambo's hosted service and is not served here.")
    raise Problem(404, "NOT_FOUND", f"{path} is not served by this server. {instead}")
