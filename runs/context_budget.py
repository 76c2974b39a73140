"""The context budget (docs/models.md): what of a thread's history fits a project's `maxInputTokens`.

No tokenizer is downloaded at run time: a message's size is estimated by providers/estimate.py (the
one estimate, which the offline model reports as its usage too), and the estimate is calibrated per
model by the prompt tokens each provider reports (`calibrate`), so a model whose tokens are shorter
than the default gets a larger estimate after its first call.

`fit` trims the model's input, oldest turns first: the system prompt and the current turn are
always kept, and a turn is kept or dropped whole, so a tool call never loses its result. A turn
starts at a user message (with the context messages right before it). Nothing stored changes.
"""
from __future__ import annotations

from typing import Any

from providers.base import ModelError
from providers.estimate import CHARS_PER_TOKEN, MESSAGE_OVERHEAD, message_tokens  # noqa: F401 - the one estimate

# The bounded history read loads this many characters per budget token (content as stored is
# wordier than what reaches the model), so trimming, not the read, decides what is left out.
READ_CHARS_PER_TOKEN = 8

_factors: dict[str, float] = {}  # model label -> reported / estimated prompt tokens


class ContextTooLarge(ModelError):
    def __init__(self, needed: int, budget: int):
        super().__init__("CONTEXT_TOO_LARGE",
                         f"The message needs about {needed} tokens of context; this project allows {budget}.",
                         retryable=False)
        self.needed = needed
        self.budget = budget


def estimate(messages: list[dict[str, Any]], label: str | None = None) -> int:
    factor = _factors.get(label or "", 1.0)
    return sum(message_tokens(m, factor) for m in messages)


def calibrate(label: str, messages: list[dict[str, Any]], reported_prompt_tokens: int) -> None:
    """Moves the model's factor towards what its provider reported for `messages` (a running mean,
    bounded so one odd answer cannot make the budget useless)."""
    raw = sum(message_tokens(m) for m in messages)
    if raw <= 0 or reported_prompt_tokens <= 0:
        return
    observed = min(4.0, max(0.25, reported_prompt_tokens / raw))
    _factors[label] = 0.5 * _factors.get(label, observed) + 0.5 * observed


def label_of(provider) -> str | None:
    """The model label a provider's estimates are calibrated under (its first model's)."""
    targets = getattr(provider, "targets", None)
    return targets[0].label if targets else None


def budget_of(max_input_tokens: int | None, max_output_tokens: int | None) -> int | None:
    """The input budget: maxInputTokens minus the output budget (None: no budget)."""
    if not max_input_tokens:
        return None
    return max(1, max_input_tokens - (max_output_tokens or 0))


def _turns(messages: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Groups of messages dropped together: a user or context (system) message opens a new group
    unless the open one holds only context so far; assistant and tool messages never open one, so a
    call and its result share a group."""
    turns: list[list[dict[str, Any]]] = []
    for message in messages:
        opens = message.get("role") in ("user", "system")
        if not turns or (opens and any(m.get("role") != "system" for m in turns[-1])):
            turns.append([message])
        else:
            turns[-1].append(message)
    return turns


def fit(messages: list[dict[str, Any]], budget: int | None, label: str | None = None) -> list[dict[str, Any]]:
    """`messages` (the system prompt first) trimmed to `budget`; raises ContextTooLarge when the
    system prompt and the current turn alone do not fit."""
    if budget is None or not messages:
        return messages
    factor = _factors.get(label or "", 1.0)
    head, rest = messages[:1], messages[1:]
    turns = _turns(rest)
    sizes = [sum(message_tokens(m, factor) for m in turn) for turn in turns]
    fixed = message_tokens(head[0], factor) + (sizes[-1] if sizes else 0)
    if fixed > budget:
        raise ContextTooLarge(fixed, budget)
    total = fixed + sum(sizes[:-1])
    first = 0
    while total > budget and first < len(turns) - 1:
        total -= sizes[first]
        first += 1
    if first == 0:
        return messages
    return head + [m for turn in turns[first:] for m in turn]


def spare(messages: list[dict[str, Any]], budget: int, label: str | None = None, *, cap: int | None = None) -> int:
    """What `budget` leaves beside the system prompt and the current turn of `messages` (at most `cap`),
    in uncalibrated estimated tokens (providers/estimate.py's, as a new text is measured): what the
    system prompt may grow by before `fit` must refuse (older turns are dropped first). Memories use it
    (runs/memories.py)."""
    factor = _factors.get(label or "", 1.0)
    turns = _turns(messages[1:])
    fixed = sum(message_tokens(m, factor) for m in messages[:1] + (turns[-1] if turns else []))
    left = budget - fixed if cap is None else min(budget - fixed, cap)
    return max(0, int(left / factor))


def run_budget(project, max_tokens: int | None) -> int | None:
    """The input budget of a run on `project` whose request asked for `max_tokens` (capped as the
    model call caps it). Its `maxInputTokens`, else the server's DEFAULT_MAX_INPUT_TOKENS, less the
    output the call may ask for: the project's `maxOutputTokens`, or the run's `max_tokens` under the
    project's output cap (projects/config.py `input_cap`, `output_cap`)."""
    from projects.config import input_cap, output_cap, project_settings

    config = project_settings(project)
    output = config.max_output_tokens
    if max_tokens is not None:
        cap = output_cap(config)
        output = min(max_tokens, cap) if cap else max_tokens
    return budget_of(input_cap(config), output)


def check_new_message(*, system_prompt: str, content: list[dict[str, Any]], budget: int | None) -> None:
    """Raises Problem 400 CONTEXT_TOO_LARGE when the system prompt and the new message alone do not
    fit: refused before anything is stored or any model called."""
    from core.problems import Problem

    if budget is None:
        return
    needed = message_tokens({"content": system_prompt}) + message_tokens({"content": content})
    if needed > budget:
        raise Problem(400, "CONTEXT_TOO_LARGE",
                      f"The message needs about {needed} tokens of context; this project allows {budget}.",
                      neededTokens=needed, budgetTokens=budget)


def history_for(thread, budget: int | None) -> list:
    """The thread's history for a run: all of it without a budget, else only the newest messages
    the budget can use (read newest first), starting at a user message so no turn is read in part."""
    from threads import selectors
    from threads.models import Message

    if budget is None:
        return selectors.message_list_all(thread=thread)
    messages, whole = selectors.message_list_newest(thread=thread, max_chars=budget * READ_CHARS_PER_TOKEN)
    if whole:
        return messages
    first_user = next((i for i, m in enumerate(messages) if m.role == Message.Role.USER), len(messages))
    return messages[first_user:]
