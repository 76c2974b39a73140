"""A run's models as one provider: the first answers, the next are tried when one fails before its
first delta with a retryable error (connection, timeout, 429, 5xx; docs/models.md).

`ModelChain.stream` is the interface's `stream`: the advance loop and the gateway use it like any
provider and the client sees one run. After each step `answered` is the target whose stream was
used and `fallbacks` lists every switch so far ({"from", "to", "code"}), for the run's record.
Each request gets the target's model, its parameters under the request's own, and the project's
output cap.
"""
from __future__ import annotations

from dataclasses import replace
from typing import AsyncIterator, Sequence

from providers.base import Delta, MissingSecret, ModelError, ModelRequest, ModelTarget, Provider


def missing_secret_error(target: ModelTarget, name: str) -> ModelError:
    # Names the variable (an operator can fix that), never a value.
    return ModelError("MISSING_ENV_VARIABLE",
                      f"The model {target.label} needs the environment variable {name}, which is not set.",
                      retryable=False)


def target_request(target: ModelTarget, request: ModelRequest, max_output_tokens: int | None) -> ModelRequest:
    """`request` for `target`: its model; its parameters under the run's; maxTokens capped."""
    parameters = {**target.parameters, **request.parameters}
    temperature = request.temperature
    if temperature is None and isinstance(parameters.get("temperature"), (int, float)):
        temperature = parameters.pop("temperature")
    parameters.pop("temperature", None)
    max_tokens = request.max_tokens
    for name in ("max_tokens", "maxTokens"):
        value = parameters.pop(name, None)
        if max_tokens is None and isinstance(value, int):
            max_tokens = value
    return replace(request, model=target.model, parameters=parameters, temperature=temperature,
                   max_tokens=max_tokens_capped(max_tokens, max_output_tokens))


def max_tokens_capped(max_tokens: int | None, cap: int | None) -> int | None:
    """What a call may ask for under the project's output cap: the cap when it asked for more or nothing."""
    if cap is None:
        return max_tokens
    return min(max_tokens or cap, cap)


class ModelChain:
    name = "chain"

    def __init__(self, targets: Sequence[ModelTarget], *, max_output_tokens: int | None = None,
                 provider_of=None):
        if not targets:
            raise ValueError("a model chain needs at least one model")
        self.targets = list(targets)
        self.max_output_tokens = max_output_tokens
        self.answered: ModelTarget | None = None
        self.fallbacks: list[dict[str, str]] = []
        if provider_of is None:
            from providers import provider_for as provider_of
        self._provider_of = provider_of

    @property
    def operation(self) -> str:
        """What a call of this chain is, for its telemetry span: `invoke_agent` when an external agent
        answers (docs/models.md#agents), else `chat`."""
        return "invoke_agent" if self.targets[0].provider == "agent" else "chat"

    def _provider(self, target: ModelTarget) -> Provider:
        try:
            endpoint = target.endpoint()
        except MissingSecret as missing:
            raise missing_secret_error(target, missing.name) from None
        return self._provider_of(endpoint)

    async def stream(self, request: ModelRequest) -> AsyncIterator[Delta]:
        """Yields the deltas of the first target that starts answering; raises the last ModelError
        when every target failed before its first delta (or at once for one that is not retryable)."""
        last = len(self.targets) - 1
        for position, target in enumerate(self.targets):
            deltas = self._provider(target).stream(target_request(target, request, self.max_output_tokens))
            try:
                first = await deltas.__anext__()
            except ModelError as error:
                await deltas.aclose()
                if not error.retryable or position == last:
                    raise
                self.fallbacks.append({"from": target.label, "to": self.targets[position + 1].label,
                                       "code": error.code})
                continue
            self.answered = target
            try:
                yield first
                async for delta in deltas:
                    yield delta
            finally:
                await deltas.aclose()
            return

    async def complete(self, request: ModelRequest):
        """One non-streamed answer, with the same fallbacks."""
        last = len(self.targets) - 1
        for position, target in enumerate(self.targets):
            try:
                answer = await self._provider(target).complete(
                    target_request(target, request, self.max_output_tokens))
            except ModelError as error:
                if not error.retryable or position == last:
                    raise
                self.fallbacks.append({"from": target.label, "to": self.targets[position + 1].label,
                                       "code": error.code})
                continue
            self.answered = target
            return answer
        raise AssertionError("unreachable")
