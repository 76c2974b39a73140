"""Built-in server tools: Python functions with a pydantic argument model.

The argument model's JSON Schema is what the model sees; the arguments the model sends are
validated against it before the function runs. A tool is offered to a project only when enabled
for it (tools.models.ProjectTool, editable in the admin).

Adding a tool:

    class Args(BaseModel):
        city: str = Field(description="City name")

    @server_tool("weather", "Current weather for a city.")
    def weather(args: Args) -> str:
        ...

Functions may be sync or async and return a string, any JSON value, or a list of content blocks.
A tool that must not run twice for one call (it sends, pays, books) says `repeatable=False`
(docs/tools.md#safe-to-repeat).
"""
from __future__ import annotations

import inspect
import typing
from dataclasses import dataclass
from typing import Any, Callable

from pydantic import BaseModel


@dataclass(frozen=True)
class ServerTool:
    name: str
    description: str
    args_model: type[BaseModel]
    fn: Callable[[Any], Any]
    # Whether running it twice with the same arguments is harmless: a run taken over by another process
    # after its process died mid-call runs it again (docs/tools.md#safe-to-repeat); one that is not
    # fails the run instead.
    repeatable: bool = True

    @property
    def parameters(self) -> dict[str, Any]:
        return self.args_model.model_json_schema()

    @property
    def is_async(self) -> bool:
        return inspect.iscoroutinefunction(self.fn)


REGISTRY: dict[str, ServerTool] = {}


def server_tool(name: str, description: str, *, repeatable: bool = True) -> Callable[[Callable], Callable]:
    def register(fn: Callable) -> Callable:
        params = list(inspect.signature(fn).parameters.values())
        # Resolve string annotations (modules using `from __future__ import annotations`).
        annotation = typing.get_type_hints(fn).get(params[0].name) if len(params) == 1 else None
        if not (isinstance(annotation, type) and issubclass(annotation, BaseModel)):
            raise TypeError(f"Server tool {name} must take one pydantic model argument")
        REGISTRY[name] = ServerTool(name, description, annotation, fn, repeatable)
        return fn

    return register


def builtin_names() -> list[str]:
    # tools.builtins imports this module to register the shipped tools: imported here, not at the top.
    import tools.builtins  # noqa: F401

    return sorted(REGISTRY)


def get_tool(name: str) -> ServerTool | None:
    import tools.builtins  # noqa: F401 - registers the shipped tools (see builtin_names)

    return REGISTRY.get(name)
