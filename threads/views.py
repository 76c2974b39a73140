"""REST endpoints for threads and messages (docs/protocol.md#endpoints). Thin: parse, call a service, render."""
from __future__ import annotations

from django.http import HttpResponse, JsonResponse, StreamingHttpResponse
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework.request import Request
from rest_framework.views import APIView

from clientsdk import wire
from core.validation import choice_param, int_param, parse_body
from threads import selectors, services
from threads.presenters import message_to_wire, thread_to_wire
from threads.whole import thread_with_messages_chunks

USER_KEY = OpenApiParameter("userKey", str, description="The end user the call acts for; required unless a "
                                                          "bearer access token names it.")
LIMIT = OpenApiParameter("limit", int, description="Page size, 1..100.")
CURSOR = OpenApiParameter("cursor", str, description="Opaque cursor from the previous page's nextCursor.")


def _json(model: wire.WireModel, status: int = 200) -> JsonResponse:
    return JsonResponse(model.wire(), status=status)


def _thread(request: Request, thread_id: str):
    principal = request.user
    user_key = principal.user_key(request.query_params.get("userKey"))
    return selectors.thread_get(project=principal.project, user_key=user_key, thread_id=thread_id)


class ThreadListView(APIView):
    @extend_schema(operation_id="threads_list", summary="List the user's threads, newest first", parameters=[USER_KEY, LIMIT, CURSOR], responses=wire.ThreadPage)
    def get(self, request: Request):
        principal = request.user
        user_key = principal.user_key(request.query_params.get("userKey"))
        limit = int_param(request.query_params.get("limit"), name="limit", default=20, low=1, high=100)
        rows, next_cursor, has_more = selectors.thread_list(
            project=principal.project, user_key=user_key, limit=limit, cursor=request.query_params.get("cursor")
        )
        page = wire.ThreadPage(threads=[thread_to_wire(t) for t in rows], next_cursor=next_cursor, has_more=has_more)
        return _json(page)

    @extend_schema(operation_id="threads_create", summary="Create a thread", request=wire.CreateThreadBody, responses={201: wire.Thread})
    def post(self, request: Request):
        principal = request.user
        body = parse_body(wire.CreateThreadBody, request.data)
        user_key = principal.user_key(body.user_key)
        thread = services.thread_create(project=principal.project, user_key=user_key, metadata=body.metadata,
                                        initial_messages=body.initial_messages or ())
        return _json(thread_to_wire(thread), status=201)


class ThreadDetailView(APIView):
    @extend_schema(operation_id="threads_retrieve", summary="Get a thread with its messages", parameters=[USER_KEY], responses=wire.ThreadWithMessages)
    def get(self, request: Request, thread_id: str):
        thread = _thread(request, thread_id)
        # Streamed batch by batch, so a thread of screenshots is not held whole (threads/whole.py).
        return StreamingHttpResponse(thread_with_messages_chunks(thread), content_type="application/json")

    @extend_schema(operation_id="threads_update", summary="Rename a thread or change its metadata", parameters=[USER_KEY], request=wire.UpdateThreadBody,
                   responses=wire.Thread)
    def patch(self, request: Request, thread_id: str):
        body = parse_body(wire.UpdateThreadBody, request.data)
        thread = _thread(request, thread_id)
        thread = services.thread_update(thread=thread, name=body.name, metadata=body.metadata)
        return _json(thread_to_wire(thread))

    @extend_schema(operation_id="threads_delete", summary="Delete a thread", parameters=[USER_KEY], responses={204: None})
    def delete(self, request: Request, thread_id: str):
        services.thread_delete(thread=_thread(request, thread_id))
        return HttpResponse(status=204)


class MessageListView(APIView):
    @extend_schema(
        operation_id="threads_messages_list", summary="List a thread's messages",
        parameters=[USER_KEY, LIMIT, CURSOR, OpenApiParameter("order", str, enum=["asc", "desc"])],
        responses=wire.MessagePage,
    )
    def get(self, request: Request, thread_id: str):
        thread = _thread(request, thread_id)
        params = request.query_params
        limit = int_param(params.get("limit"), name="limit", default=50, low=1, high=100)
        order = choice_param(params.get("order"), name="order", default="asc", choices=("asc", "desc"))
        rows, next_cursor, has_more = selectors.message_list(thread=thread, limit=limit,
                                                             cursor=params.get("cursor"), order=order)
        page = wire.MessagePage(messages=[message_to_wire(m) for m in rows], next_cursor=next_cursor,
                                has_more=has_more)
        return _json(page)


class MessageDetailView(APIView):
    @extend_schema(operation_id="threads_messages_retrieve", summary="Get one message", parameters=[USER_KEY], responses=wire.Message)
    def get(self, request: Request, thread_id: str, message_id: str):
        thread = _thread(request, thread_id)
        return _json(message_to_wire(selectors.message_get(thread=thread, message_id=message_id)))


class ComponentStateView(APIView):
    @extend_schema(operation_id="threads_components_state", summary="Set a component's state", request=wire.ComponentStateBody,
                   responses=wire.ComponentStateResult)
    def post(self, request: Request, thread_id: str, component_id: str):
        body = parse_body(wire.ComponentStateBody, request.data)
        principal = request.user
        user_key = principal.user_key(body.user_key)
        thread = selectors.thread_get(project=principal.project, user_key=user_key, thread_id=thread_id)
        state = services.component_state_set(thread=thread, component_id=component_id, state=body.state,
                                             patch=body.patch)
        return _json(wire.ComponentStateResult(state=state))
