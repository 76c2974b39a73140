"""Suggested next user messages for an assistant message (docs/protocol.md#thread-names-and-suggestions).

The model is asked for a JSON object; its reply is validated with `DraftReply`, asked once more when
it does not validate, and refused (502 LLM_SERVER_ERROR) when the second reply does not either.
"""
from __future__ import annotations

import json
import logging
from dataclasses import replace
from typing import Annotated, Sequence

from django.db import transaction
from pydantic import AliasChoices, BaseModel, ConfigDict, Field, StringConstraints

from clientsdk import wire
from core.db import db_call
from core.problems import Problem
from projects.models import Project
from providers.base import ModelRequest, ModelTask
from telemetry.calls import model_complete
from threads.content import message_text, transcript
from threads.cursors import keyset_page
from threads.models import Message, Suggestion, Thread
from threads.selectors import thread_get

log = logging.getLogger(__name__)

PROMPT_MESSAGES = 12
PROMPT_CHARS = 6000
ATTEMPTS = 2  # the first reply, and one more when it does not validate
RETRY_PROMPT = ("That is not the JSON object asked for. Answer again with only the JSON object "
                '{"suggestions": [{"title", "description", "detailedSuggestion"}, …]}.')

Line = Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=500)]


class DraftSuggestion(BaseModel):
    """One suggestion as the model writes it."""

    model_config = ConfigDict(extra="ignore")

    title: Line
    description: Annotated[str, StringConstraints(strip_whitespace=True, max_length=2000)] = ""
    # Models asked for camelCase sometimes answer snake_case; both mean the same field.
    detailed_suggestion: Annotated[str, StringConstraints(strip_whitespace=True, min_length=1, max_length=4000),
                                   Field(validation_alias=AliasChoices("detailedSuggestion", "detailed_suggestion"))]


class DraftReply(BaseModel):
    model_config = ConfigDict(extra="ignore")

    suggestions: Annotated[list[DraftSuggestion], Field(min_length=1)]


def _system_prompt(max_suggestions: int, components: Sequence[wire.AvailableComponent]) -> str:
    prompt = (
        "You suggest what the user of a chat application could say next, given the conversation so far. "
        f"Write at most {max_suggestions} suggestions that follow from the assistant's last message. "
        "Answer with a JSON object and nothing else, in this shape: "
        '{"suggestions": [{"title": "a label of at most six words", '
        '"description": "one sentence on what it asks for", '
        '"detailedSuggestion": "the whole message the user would send"}]}'
    )
    if components:
        listed = "\n".join(f"- {c.name}: {c.description}" for c in components)
        prompt += ("\n\nThe application can show these UI components; where one fits, suggest asking "
                   f"for it by name:\n{listed}")
    return prompt


async def suggestion_generate(*, project: Project, user_key: str | None, thread_id: str, message_id: str,
                               max_suggestions: int,
                               components: Sequence[wire.AvailableComponent] = ()) -> list[Suggestion]:
    """Generates suggestions for an assistant message and stores them in place of its earlier ones.

    Takes no run lock. 404 THREAD_NOT_FOUND / MESSAGE_NOT_FOUND; 429/502 when the model fails, and 502
    LLM_SERVER_ERROR when two replies in a row are not the JSON asked for.
    """
    message, history = await db_call(_suggestion_inputs, project=project, user_key=user_key,
                                     thread_id=thread_id, message_id=message_id)
    last_user = next((text for m in reversed(history) if m.role == Message.Role.USER
                      and (text := message_text(m))), "")
    request = ModelRequest(
        messages=[{"role": "system", "content": _system_prompt(max_suggestions, components)},
                  {"role": "user", "content": "The conversation:\n\n"
                   + transcript(history, max_chars=PROMPT_CHARS, keep_end=True)}],
        json_output=True,
        task=ModelTask("suggestions", {
            "components": [{"name": c.name, "description": c.description} for c in components],
            "maxSuggestions": max_suggestions,
            "lastUserText": last_user,
        }),
    )
    # Counted against the thread's user also when the call named none (the user-less SDK routes).
    drafts = await _drafts(request, project=project, user_key=message.thread.user_key,
                           thread_id=message.thread.id)
    return await db_call(suggestion_replace, message=message, drafts=drafts[:max_suggestions])


async def _drafts(request: ModelRequest, *, project: Project, user_key: str | None,
                  thread_id: str) -> list[DraftSuggestion]:
    for attempt in range(1, ATTEMPTS + 1):
        # One request counts once against the run rates; every reply's tokens count.
        reply = (await model_complete(request, project=project, user_key=user_key, kind="suggestions",
                                      thread_id=thread_id, admit=attempt == 1)).text
        try:
            parsed = json.loads(_unfenced(reply))
            # A bare array (what some servers answer without JSON mode) is read as the suggestions.
            return DraftReply.model_validate({"suggestions": parsed} if isinstance(parsed, list) else parsed).suggestions
        except ValueError as exc:  # json's errors and pydantic's ValidationError are ValueErrors
            # The reply is not logged: it may quote the conversation.
            log.warning("Suggestions reply %d of %d did not validate: %s", attempt, ATTEMPTS, type(exc).__name__)
        # The model sees what it answered and is told why that will not do: a plain repeat of the
        # same request tends to get the same answer.
        request = replace(request, messages=[*request.messages, {"role": "assistant", "content": reply[:4000]},
                                             {"role": "user", "content": RETRY_PROMPT}])
    raise Problem(502, "LLM_SERVER_ERROR", "The model's suggestions could not be read.",
                  category="server_error", isRetryable=True)


def _unfenced(reply: str) -> str:
    """The reply without a Markdown code fence around it: OpenAI-compatible servers that ignore JSON
    mode often answer ```json … ```."""
    text = reply.strip()
    if text.startswith("```") and text.endswith("```") and "\n" in text:
        text = text[text.index("\n") + 1:-3]
    return text


def _assistant_message(*, project: Project, user_key: str | None, thread_id: str, message_id: str) -> Message:
    """The thread's assistant message; 404 THREAD_NOT_FOUND, or MESSAGE_NOT_FOUND for any other message."""
    thread = thread_get(project=project, user_key=user_key, thread_id=thread_id)
    message = thread.messages.filter(id=message_id, role=Message.Role.ASSISTANT).first()
    if message is None:
        raise Problem(404, "MESSAGE_NOT_FOUND", f"Assistant message {message_id} was not found in this thread.")
    return message


def thread_run_status(*, project: Project, thread_id: str) -> str | None:
    """The thread's run status (`idle` when no run is under way); None for no such thread."""
    return (Thread.objects.filter(project=project, pk=thread_id).values_list("run_status", flat=True).first())


def _suggestion_inputs(**scope) -> tuple[Message, list[Message]]:
    """The message and the conversation up to it (its last PROMPT_MESSAGES messages)."""
    message = _assistant_message(**scope)
    earlier = (message.thread.messages.filter(created_at__lte=message.created_at)
               .order_by("-created_at", "-id")[:PROMPT_MESSAGES])
    return message, list(reversed(earlier))


def suggestion_replace(*, message: Message, drafts: Sequence[DraftSuggestion]) -> list[Suggestion]:
    """Replaces the message's suggestions with `drafts`, in order, in one transaction.

    Holds the message's row lock for it, so two generations for one message end with one set, not
    both (each delete would otherwise miss the other's new rows). 404 MESSAGE_NOT_FOUND if the
    message was deleted meanwhile.
    """
    rows = [Suggestion(message=message, position=position, title=draft.title,
                       # The SDK calls `description` an alias of the detailed suggestion: never leave it empty.
                       description=draft.description or draft.detailed_suggestion,
                       detailed_suggestion=draft.detailed_suggestion)
            for position, draft in enumerate(drafts)]
    with transaction.atomic():
        if not Message.objects.select_for_update().filter(pk=message.pk).exists():
            raise Problem(404, "MESSAGE_NOT_FOUND", f"Assistant message {message.pk} was not found in this thread.")
        Suggestion.objects.filter(message=message).delete()
        Suggestion.objects.bulk_create(rows)
    return rows


def suggestion_list(*, project: Project, user_key: str | None, thread_id: str, message_id: str, limit: int,
                    cursor: str | None) -> tuple[list[Suggestion], str | None, bool]:
    """One page of the message's stored suggestions, in the model's order."""
    message = _assistant_message(project=project, user_key=user_key, thread_id=thread_id, message_id=message_id)
    return keyset_page(message.suggestions.all(), cursor=cursor, limit=limit, descending=False)
