"""The offline model's non-streamed answers (documented in docs/models.md with its other rules).

It cannot read a prompt, so each task is answered from the facts the caller wrote the prompt from
(`ModelTask.facts`):

- `thread_name` (facts `firstUserText`): the first user text, cut at a word boundary to at most
  40 characters;
- `suggestions` (facts `components` [{name, description}], `maxSuggestions`, `lastUserText`):
  "Show <Component>" for each offered component, then "Tell me more", at most `maxSuggestions`,
  as the same JSON a real model is asked for;
- `memories` (facts `userTexts`, the user's texts of the conversation's last turn): each sentence of
  them (cut at `.`, `!`, `?`, `;` and line breaks; questions are left out) that matches one of
  MEMORY_RULES, in the rules' order, becomes a memory of that rule's category and importance, as the
  same JSON a real model is asked for (`{"memories": [{content, category, importance}]}`, at most
  MEMORY_LIMIT): "Remember that X" → X (fact, 4); "my wife / husband / partner / friend / boss /
  colleague / … " → the sentence (relationship, 3); "I prefer / like / love / enjoy / hate /
  dislike / don't like" → the sentence (preference, 3); "my goal is / I want to / I'd like to / I plan
  to / I'm trying to" → the sentence (goal, 3); "my name is / call me / I live in / I work at, as,
  for, in / I am a / I'm a" → the sentence (fact, 3); no match, no memory;
- the `!fail` rule holds here too: a task whose user text starts with `!fail` fails like a 5xx;
- any other request: the text the streaming rules would give, whole.
"""
from __future__ import annotations

import json
import re
from typing import Any

from providers.base import ModelError, ModelTask

NAME_LIMIT = 40
MEMORY_LIMIT = 10
MEMORY_CHARS = 1000
_I = r"(?:i|i'm|i am)"
# (pattern on a sentence, category, importance); the first that matches decides. "Remember that"
# keeps only what follows it.
MEMORY_RULES: tuple[tuple[re.Pattern, str, int], ...] = tuple((re.compile(pattern, re.IGNORECASE), category, importance)
                                                             for pattern, category, importance in (
    (r"^(?:please\s+)?remember\s+(?:that\s+)?(?P<what>.+)$", "fact", 4),
    (r"\bmy\s+(?:wife|husband|partner|boyfriend|girlfriend|son|daughter|kids?|children|mother|mom|mum|father|dad|"
     r"brother|sister|friend|boss|manager|colleague|co-?worker|team)\b", "relationship", 3),
    (r"\bi\s+(?:really\s+)?(?:prefer|like|love|enjoy|hate|dislike|don't like|do not like)\b", "preference", 3),
    (r"\b(?:my goal is|i want to|i'd like to|i would like to|i plan to|i'm trying to|i am trying to)\b", "goal", 3),
    (r"\b(?:my name is|call me|i live in|i work (?:at|as|for|in)|i am an?|i'm an?)\b", "fact", 3),
))
_SENTENCE_END = re.compile(r"(?<=[.!?;])\s+|\n+")


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
    if task.name == "memories":
        return json.dumps({"memories": offline_memories(task.facts.get("userTexts") or [])})
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


def offline_memories(texts: list[str]) -> list[dict[str, Any]]:
    """The memories MEMORY_RULES find in the user's `texts` (see the module docstring)."""
    found = []
    for text in texts:
        for sentence in _SENTENCE_END.split(text or ""):
            sentence = sentence.strip()
            if not sentence or sentence.endswith("?"):
                continue
            for pattern, category, importance in MEMORY_RULES:
                match = pattern.search(sentence)
                if match:
                    content = (match.groupdict().get("what") or sentence).strip()
                    found.append({"content": content[:MEMORY_CHARS], "category": category, "importance": importance})
                    break
    return found[:MEMORY_LIMIT]
