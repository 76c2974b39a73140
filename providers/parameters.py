"""The chat-completions parameters a caller may send through the gateway, and which provider honours which.

They travel in `ModelRequest.parameters` under OpenAI's names (the gateway's callers speak Chat
Completions); each provider sends them as its API names them (`providers/anthropic_messages.py`
maps `stop` to `stop_sequences`, `reasoning_effort` to a thinking budget, a JSON schema to structured
output). A parameter a provider cannot honour is refused before the call (`parameter_refusal`), so a
caller learns it instead of getting an answer of another shape (gateway/README.md#forwarded-parameters).
"""
from __future__ import annotations

from typing import Any

# Chat Completions' parameters that change the answer, in the order /api/models lists them.
FORWARDED = ("response_format", "stop", "top_p", "seed", "presence_penalty", "frequency_penalty",
             "parallel_tool_calls", "logprobs", "top_logprobs", "reasoning_effort")

# Always honoured (the gateway's own fields): listed by /api/models with the forwarded ones.
BASIC = ("messages", "tools", "tool_choice", "temperature", "max_tokens", "max_completion_tokens", "stream",
         "stream_options")

_SUPPORTED: dict[str, frozenset[str]] = {
    # Log probabilities would reach OpenAI, but the gateway's answer does not carry them back yet.
    "openai": frozenset(FORWARDED) - {"logprobs", "top_logprobs"},
    # The Messages API has no seed, penalties or log probabilities.
    "anthropic": frozenset({"response_format", "stop", "top_p", "parallel_tool_calls", "reasoning_effort"}),
    # The offline model follows documented rules (providers/offline.py) and honours none of them.
    "offline": frozenset(),
}

# reasoning_effort → Anthropic's thinking budget in tokens (its minimum is 1,024).
THINKING_BUDGETS = {"minimal": 1024, "low": 2048, "medium": 8192, "high": 24576}


def supported_parameters(provider: str) -> list[str]:
    """What a model of `provider` honours, for `/api/models`."""
    honoured = _SUPPORTED.get(provider, frozenset())
    return [*BASIC, *(name for name in FORWARDED if name in honoured)]


def parameter_refusal(provider: str, parameters: dict[str, Any]) -> tuple[str, str] | None:
    """(parameter, sentence) for the first parameter `provider` cannot honour as sent; None when it can."""
    honoured = _SUPPORTED.get(provider, frozenset())
    for name in FORWARDED:
        if name not in parameters:
            continue
        if name in ("logprobs", "top_logprobs"):
            return name, f"{name} is not supported: this gateway does not return log probabilities."
        if name not in honoured:
            return name, f"{name} is not supported by the {provider} provider that answers this model."
        if provider == "anthropic" and name == "response_format" \
                and parameters[name].get("type") == "json_object":
            return name, ("response_format json_object is not supported by the anthropic provider: send "
                          "{type: 'json_schema', json_schema: {name, schema}} instead.")
    return None
