"""Thread names: one short model call turns the start of a conversation into a title (docs/protocol.md#thread-names-and-suggestions)."""
from __future__ import annotations

from django.utils import timezone

from core.db import db_call
from core.problems import Problem, validation_error
from projects.models import Project
from providers.base import ModelRequest, ModelTask
from providers.offline_tasks import cut_at_word
from telemetry.calls import model_complete
from threads.content import transcript
from threads.models import Message, Thread
from threads.selectors import thread_get

NAME_MAX = 60
# A title comes from how a conversation starts; later turns rarely change what it is about.
PROMPT_MESSAGES = 12
PROMPT_CHARS = 4000
SYSTEM_PROMPT = (
    "You name conversations. Reply with a short title for the conversation you are given: at most "
    f"{NAME_MAX} characters, in the conversation's language, without quotes or a final full stop. "
    "Reply with the title alone."
)


async def thread_name_generate(*, project: Project, user_key: str | None, thread_id: str) -> Thread:
    """Names the thread from its conversation and returns it, fresh from the database.

    Takes no run lock (a run may be streaming): the name is written with one UPDATE of its own
    columns. 404 THREAD_NOT_FOUND, 400 VALIDATION_ERROR when no message has user text, 429/502 when
    the model fails or gives no usable title.
    """
    thread, messages, first_text = await db_call(_name_inputs, project=project, user_key=user_key,
                                                 thread_id=thread_id)
    if first_text is None:
        raise validation_error("The thread has no user text to make a name from.")
    conversation = transcript(messages, max_chars=PROMPT_CHARS, keep_end=False)
    # No max_tokens: reasoning models refuse it or spend it thinking; the reply is cut to NAME_MAX anyway.
    request = ModelRequest(
        messages=[{"role": "system", "content": SYSTEM_PROMPT},
                  {"role": "user", "content": f"The conversation:\n\n{conversation}"}],
        task=ModelTask("thread_name", {"firstUserText": first_text}),
    )
    # Counted against the thread's user also when the call named none (the user-less SDK routes).
    name = title_from_reply((await model_complete(request, project=project, user_key=thread.user_key, kind="name",
                                                      thread_id=thread.id)).text)
    if not name:
        raise Problem(502, "LLM_SERVER_ERROR", "The model gave no name for the thread.",
                      category="server_error", isRetryable=True)
    return await db_call(thread_name_set, thread=thread, name=name)


def _name_inputs(*, project: Project, user_key: str | None, thread_id: str) -> tuple[Thread, list[Message], str | None]:
    """The thread, the start of its conversation, and its first user text (None if it has none)."""
    thread = thread_get(project=project, user_key=user_key, thread_id=thread_id)
    ordered = thread.messages.order_by("created_at", "id")
    # Bounded: a thread whose first 50 user messages hold no text (only resources) has none worth a name.
    user_messages = ordered.filter(role=Message.Role.USER)[:50]
    first_text = next((text for message in user_messages if (text := typed_text(message))), None)
    return thread, list(ordered[:PROMPT_MESSAGES]), first_text


def typed_text(message: Message) -> str:
    """What the user typed: the message's text blocks (not attached resources)."""
    return "\n".join(b.get("text") or "" for b in message.content if b.get("type") == "text").strip()


def title_from_reply(text: str) -> str:
    """The model's reply made a title: its first non-empty line without a `Title:` label, quotes or a
    final full stop, cut at a word boundary to NAME_MAX characters."""
    line = next((line.strip() for line in text.splitlines() if line.strip()), "")
    if line.lower().startswith("title:"):
        line = line[len("title:"):].strip()
    line = line.strip("\"'“”‘’`*").strip()
    if line.endswith(".") and not line.endswith(".."):
        line = line[:-1]
    return cut_at_word(line, NAME_MAX)


def thread_name_set(*, thread: Thread, name: str) -> Thread:
    """Stores the name and returns the thread as it is now.

    One UPDATE of `name` and `updated_at` only: a run streaming on the thread holds the lock and writes
    its own columns, and neither overwrites the other. 404 if the thread was deleted meanwhile.
    """
    if not Thread.objects.filter(pk=thread.pk).update(name=name, updated_at=timezone.now()):
        raise Problem(404, "THREAD_NOT_FOUND", f"Thread {thread.pk} was not found.")
    return Thread.objects.get(pk=thread.pk)
