"""The offline model's non-streamed answers (documented in docs/models.md with its other rules).

It cannot read a prompt, so each task is answered from the facts the caller wrote the prompt from
(`ModelTask.facts`):

- `thread_name` (facts `firstUserText`): the first user text, cut at a word boundary to at most
  40 characters;
- `suggestions` (facts `components` [{name, description}], `maxSuggestions`, `lastUserText`):
  "Show <Component>" for each offered component, then "Tell me more", at most `maxSuggestions`,
  as the same JSON a real model is asked for;
- the `!fail` rule holds here too: a task whose user text starts with `!fail` fails like a 5xx;
- any other request: the text the streaming rules would give, whole.
"""
from __future__ import annotations

import json
from typing import Any

from providers.base import ModelError, ModelTask

NAME_LIMIT = 40


def fail_requested(task: ModelTask) -> bool:
    text = task.facts.get("firstUserText") or task.facts.get("lastUserText") or ""
    return text.lstrip().startswith("!fail")


def task_answer(task: ModelTask) -> str | None:
    """The answer to a task this model knows, or None for any other."""
    if fail_requested(task):
        raise ModelError("LLM_SERVER_ERROR", "The model provider failed (the offline model's !fail rule).",
                         retryable=True, status=500)
    if task.name == "thread_name":
        return cut_at_word(task.facts.get("firstUserText") or "", NAME_LIMIT)
    if task.name == "suggestions":
        return json.dumps({"suggestions": offline_suggestions(task.facts)})
    return None


def cut_at_word(text: str, limit: int) -> str:
    """`text` with its whitespace collapsed, cut to at most `limit` characters at a word boundary.

    A first word longer than `limit` is cut inside the word: a title is better than none.
    """
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    head = text[:limit]
    if text[limit].isalnum():  # the limit falls inside a word: go back to the last space
        cut = head.rfind(" ")
        head = head[:cut] if cut > 0 else head
    return head.rstrip(" ,.;:-")


def offline_suggestions(facts: dict[str, Any]) -> list[dict[str, str]]:
    suggestions = [
        {"title": f"Show {component['name']}",
         "description": component.get("description") or f"Render the {component['name']} component.",
         # Sending the title back names the component, which makes this model render it.
         "detailedSuggestion": f"Show {component['name']}"}
        for component in facts.get("components") or ()
    ]
    suggestions.append({"title": "Tell me more", "description": "Ask for more detail about the last answer.",
                        "detailedSuggestion": "Tell me more about that."})
    return suggestions[:max(int(facts.get("maxSuggestions") or 1), 1)]
