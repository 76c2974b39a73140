"""A synchronous port of OpenTiny TinyRobot 0.4's message engine (`useMessage`).

`MessageEngine` keeps an OpenAI-style conversation (plain dicts), sends it to
a response provider, folds the streamed chunks into the assistant message, and
runs plugins around each request (tools, continuation on `length`, ...).
`ChatCompletionsProvider` is the provider for this server's
`/api/chat/completions` gateway. Nothing here imports Django.
"""

from .abort import AbortError, AbortSignal
from .context import (
    ABORTED,
    CALLING_TOOLS,
    COMPLETED,
    COMPLETING,
    DEFAULT_EXCLUDED_FIELDS,
    ERROR,
    IDLE,
    PROCESSING,
    REQUESTING,
    Plugin,
    PluginContext,
    RequestBody,
)
from .delta import combine_delta, filter_message_fields
from .engine import MessageEngine, deduplicate_plugins
from .normalize import iterate_result
from .plugins import (
    FallbackRolePlugin,
    LengthPlugin,
    ThinkingPlugin,
    default_plugins,
    fallback_role_plugin,
    length_plugin,
    thinking_plugin,
)
from .provider import (
    ChatCompletionsConnectionError,
    ChatCompletionsError,
    ChatCompletionsHTTPError,
    ChatCompletionsProvider,
    ChatCompletionsStreamError,
)
from .sse import sse_stream_to_generator
from .tools import ToolPlugin, tool_plugin

__all__ = [
    "ABORTED",
    "CALLING_TOOLS",
    "COMPLETED",
    "COMPLETING",
    "DEFAULT_EXCLUDED_FIELDS",
    "ERROR",
    "IDLE",
    "PROCESSING",
    "REQUESTING",
    "AbortError",
    "AbortSignal",
    "ChatCompletionsConnectionError",
    "ChatCompletionsError",
    "ChatCompletionsHTTPError",
    "ChatCompletionsProvider",
    "ChatCompletionsStreamError",
    "FallbackRolePlugin",
    "LengthPlugin",
    "MessageEngine",
    "Plugin",
    "PluginContext",
    "RequestBody",
    "ThinkingPlugin",
    "ToolPlugin",
    "combine_delta",
    "deduplicate_plugins",
    "default_plugins",
    "fallback_role_plugin",
    "filter_message_fields",
    "iterate_result",
    "length_plugin",
    "sse_stream_to_generator",
    "thinking_plugin",
    "tool_plugin",
]
