"""A project's settings beyond its columns: models, access, limits, transcription (docs/projects.md).

One schema, `ProjectSettings`, is what the project file (`manage.py apply_projects`) validates, what the
admin edits and what `Project.settings` stores (camelCase, as in the file). Everything reads it through
`project_settings(project)`, which parses a project's stored document once per process and version
(`Project.settings_version` is bumped by every write), so the run path pays no pydantic per request.

Secrets (`apiKey`) are either `env:NAME`, resolved when used (never when applied), or a stored value
that `projects/secrets.py` encrypts before it reaches the column.
"""
from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import AfterValidator, AliasChoices, BaseModel, ConfigDict, Field, field_validator, model_validator
from pydantic.alias_generators import to_camel

from core.runtime import process_runtime

ENV_REF = re.compile(r"^env:([A-Za-z_][A-Za-z0-9_]*)$")


class SettingsModel(BaseModel):
    # Unknown keys are refused (a typo in the project file must not be silently ignored).
    model_config = ConfigDict(alias_generator=to_camel, populate_by_name=True, extra="forbid", strict=True)


def _check_env_ref(value: str) -> str:
    if value.startswith("env:") and not ENV_REF.match(value):
        raise ValueError("an env: reference must name a variable: env:NAME (letters, digits, _)")
    return value


_ORIGIN = re.compile(r"^https?://[^/\s?#]+$", re.IGNORECASE)


def _check_origin(value: str) -> str:
    # What a browser sends in `Origin`; `null` and `*` name no site (projects/access.py).
    if not _ORIGIN.match(value.strip().rstrip("/")):
        raise ValueError("an allowed origin is scheme://host[:port], e.g. https://app.example.com (no path)")
    return value


# A secret: `env:NAME` (resolved at use) or a value to be stored encrypted.
Secret = Annotated[str, AfterValidator(_check_env_ref)]


# The kinds of agent Tambo Cloud's `agentProviderType` named. Each is reached through its AG-UI endpoint
# (ag-ui-langgraph, PydanticAI's AG-UI app, Mastra's, CrewAI's, LlamaIndex's): the name is a label.
AGENT_PROTOCOLS = ("ag-ui", "langgraph", "mastra", "crewai", "llamaindex", "pydantic-ai")
AgentProtocol = Literal["ag-ui", "langgraph", "mastra", "crewai", "llamaindex", "pydantic-ai"]
_HTTP_URL = re.compile(r"^https?://[^/\s?#]+(/\S*)?$", re.IGNORECASE)


class ModelSpec(SettingsModel):
    """One model a project may call; the first of a project's list answers, the others are fallbacks.

    `provider: agent` is an external agent the project's runs go to over AG-UI (docs/models.md#agents):
    its `url`, `headers` and `name` (Tambo Cloud's `agentUrl`, `agentHeaders`, `agentName` and
    `agentProviderType` are accepted for them) are the operator's; no request can name another URL."""

    provider: Literal["openai", "anthropic", "offline", "agent"]
    model: str = Field(default="", max_length=200)
    api_key: Secret | None = None
    base_url: str | None = Field(default=None, max_length=1000)
    protocol: AgentProtocol | None = Field(default=None, validation_alias=AliasChoices("protocol",
                                                                                        "agentProviderType"))
    url: str | None = Field(default=None, max_length=1000, validation_alias=AliasChoices("url", "agentUrl"))
    name: str | None = Field(default=None, min_length=1, max_length=200,
                             validation_alias=AliasChoices("name", "agentName"))
    headers: dict[str, Secret] = Field(default_factory=dict, validation_alias=AliasChoices("headers",
                                                                                           "agentHeaders"))
    # The longest an agent may stay silent (no byte of its stream) before the run ends AGENT_TIMEOUT.
    timeout_seconds: float | None = Field(default=None, gt=0, le=3600)

    @model_validator(mode="after")
    def _agent_or_model(self) -> "ModelSpec":
        agent_keys = [key for key, value in (("protocol", self.protocol), ("url", self.url), ("name", self.name),
                                             ("headers", self.headers), ("timeoutSeconds", self.timeout_seconds))
                      if value]
        if self.provider != "agent":
            if not self.model:
                raise ValueError("model is required")
            if agent_keys:
                raise ValueError(f"{', '.join(agent_keys)}: only a model of provider agent takes these")
            return self
        if not self.url or not _HTTP_URL.match(self.url):
            raise ValueError("an agent needs its url: the http(s) address of its AG-UI endpoint")
        if self.api_key or self.base_url:
            raise ValueError("an agent takes url and headers, not apiKey or baseUrl")
        for header in self.headers:
            if not re.fullmatch(r"[A-Za-z0-9!#$%&'*+.^_`|~-]{1,100}", header):
                raise ValueError(f"{header[:100]!r} is not a header name")
        return self

    @property
    def label_model(self) -> str:
        """The name runs and the admin show: the model's, or an agent's `name` (else `agent`)."""
        return (self.model or self.name or "agent") if self.provider == "agent" else self.model


class TranscriptionSpec(SettingsModel):
    provider: Literal["openai"] = "openai"
    model: str = Field(default="whisper-1", min_length=1, max_length=200)
    api_key: Secret | None = None
    base_url: str | None = Field(default=None, max_length=1000)


class Limits(SettingsModel):
    """Section 18's limits; 0 (or absent) means no limit, except `runsPerMinute`: absent, the server's
    DEFAULT_RUNS_PER_MINUTE applies (`run_rate`), and 0 turns it off."""

    runs_per_minute_per_user: int = Field(default=0, ge=0)
    runs_per_minute: int | None = Field(default=None, ge=0)
    tokens_per_day_per_user: int = Field(default=0, ge=0)
    tokens_per_day: int = Field(default=0, ge=0)
    # Model calls one run may make (its steps); the lower of it and MAX_MODEL_CALLS_PER_RUN applies.
    model_calls_per_run: int = Field(default=0, ge=0)

    @field_validator("runs_per_minute", mode="before")
    @classmethod
    def _given_as_a_number(cls, value: Any) -> Any:
        # Left out, the server's default applies; written out, it must be a number (0: none).
        if value is None:
            raise ValueError("runsPerMinute must be an integer (leave it out for the server's default)")
        return value


class Retention(SettingsModel):
    """How long the project's data is kept (docs/operations.md#retention-and-deletion); 0 or absent:
    for ever. The retention job (retention/policy.py) deletes what is older, in bounded batches."""

    # Threads, with their messages, runs and suggestions, this many days after their last activity.
    transcripts_days: int = Field(default=0, ge=0)
    # The files and images in messages (their bytes), this many days after the message: the message
    # stays, with a line naming the file in their place. At most transcriptsDays.
    uploads_days: int = Field(default=0, ge=0)
    # Usage rows (what each run and call spent: the admin's usage page), this many days after the call.
    usage_days: int = Field(default=0, ge=0)
    # The run event log (replays of recent runs), this many minutes after the run ended; the
    # server-wide RUN_REPLAY_SECONDS removes them sooner when it is shorter.
    event_log_minutes: int = Field(default=0, ge=0)

    @model_validator(mode="after")
    def _uploads_within_transcripts(self) -> "Retention":
        if self.transcripts_days and self.uploads_days > self.transcripts_days:
            raise ValueError("uploadsDays must not exceed transcriptsDays (the uploads go with their thread)")
        return self

    @property
    def any(self) -> bool:
        return bool(self.transcripts_days or self.uploads_days or self.usage_days or self.event_log_minutes)


class ProjectSettings(SettingsModel):
    """What `Project.settings` holds. The project's name, system prompt and user-token settings stay in
    their own columns (the project file maps `systemPrompt` and `userTokens` onto them)."""

    allow_system_prompt_override: bool = False
    # A run whose client goes away without saying `onDisconnect` goes on to its end (docs/protocol.md#background-runs).
    runs_outlive_disconnect: bool = False
    token_required: bool = False
    allowed_origins: list[Annotated[str, AfterValidator(_check_origin)]] = Field(default_factory=list)
    models: list[ModelSpec] = Field(default_factory=list)
    allowed_models: list[str] = Field(default_factory=list)
    max_input_tokens: int | None = Field(default=None, gt=0)
    max_output_tokens: int | None = Field(default=None, gt=0)
    # The most characters of one server or MCP tool result (runs/toolbox.py); TOOL_RESULT_MAX_CHARS if unset.
    tool_result_max_chars: int | None = Field(default=None, gt=0)
    parameters: dict[str, Any] = Field(default_factory=dict)
    transcription: TranscriptionSpec | None = None
    limits: Limits = Field(default_factory=Limits)
    retention: Retention = Field(default_factory=Retention)
    # Memory (docs/memory.md): remember what each user tells the project, across threads.
    memory_enabled: bool = False
    # The model may save and forget memories itself (the save_memory and forget_memory tools).
    memory_tools_enabled: bool = False
    # Content encrypted at rest (docs/projects.md#content-encrypted-at-rest): messages, tool calls and
    # results, uploads and component state stored encrypted with SECRETS_KEYS (threads/sealing.py).
    encrypt_content: bool = False

    @model_validator(mode="after")
    def _content_needs_keys(self) -> "ProjectSettings":
        if self.encrypt_content and not any(k.strip() for k in settings.SECRETS_KEYS):
            raise ValueError("encryptContent needs SECRETS_KEYS (a Fernet key) set on the server")
        return self

    @model_validator(mode="after")
    def _memory_tools_need_memory(self) -> "ProjectSettings":
        if self.memory_tools_enabled and not self.memory_enabled:
            raise ValueError("memoryToolsEnabled needs memoryEnabled (the tools work on the user's memories)")
        return self


DEFAULT_SETTINGS = ProjectSettings()


# The safe defaults of a project nobody configured (docs/abuse-and-limits.md#safe-defaults): each of a
# project's own settings overrides the server's, whose 0 turns that default off.
def output_cap(config: ProjectSettings) -> int | None:
    """The most output tokens one model call of the project may ask for (its `maxOutputTokens`, else
    DEFAULT_MAX_OUTPUT_TOKENS); None: no cap."""
    return config.max_output_tokens or settings.DEFAULT_MAX_OUTPUT_TOKENS or None


def input_cap(config: ProjectSettings) -> int | None:
    """The most input tokens one model call of the project may send (its `maxInputTokens`, else
    DEFAULT_MAX_INPUT_TOKENS); None: no budget."""
    return config.max_input_tokens or settings.DEFAULT_MAX_INPUT_TOKENS or None


def run_rate(limits: Limits) -> int:
    """The project-wide runs per minute (its `runsPerMinute`, else DEFAULT_RUNS_PER_MINUTE); 0: none."""
    return settings.DEFAULT_RUNS_PER_MINUTE if limits.runs_per_minute is None else limits.runs_per_minute

# (project pk, settings_version) -> parsed settings. A project's rows are few and small; the cache
# holds one entry per project (an older version is replaced).
_parsed: dict[str, tuple[int, ProjectSettings]] = {}
process_runtime.cache_register("parsed project settings", _parsed.clear)


def project_settings(project) -> ProjectSettings:
    """The project's parsed settings. A stored document that no longer validates (written by an older
    version) raises pydantic.ValidationError: the project file or the admin must fix it."""
    raw = getattr(project, "settings", None)
    if not raw:
        return DEFAULT_SETTINGS
    version = getattr(project, "settings_version", 0)
    hit = _parsed.get(project.pk)
    if hit is not None and hit[0] == version:
        return hit[1]
    parsed = ProjectSettings.model_validate(raw)
    _parsed[project.pk] = (version, parsed)
    return parsed


def project_settings_dump(value: ProjectSettings) -> dict:
    """The stored (camelCase) form; defaults left out so the column stays small."""
    return value.model_dump(by_alias=True, exclude_defaults=True, mode="json")


# Called with (project, its settings) after every write of a project's settings, by the apps that keep
# something in step with them (threads/apps.py: which threads store their content encrypted); a
# registry, so this layer imports none of them.
settings_saved_hooks: list = []


def project_settings_saved(project) -> None:
    value = project_settings(project)
    for hook in settings_saved_hooks:
        hook(project, value)


def project_settings_save(project, value: ProjectSettings) -> None:
    """Stores `value` as the project's settings and bumps its version (one UPDATE). Secrets are stored
    as given: callers encrypt typed-in values first (projects/secrets.py)."""
    from django.db.models import F

    from projects.models import Project

    project.settings = project_settings_dump(value)
    Project.objects.filter(pk=project.pk).update(settings=project.settings,
                                                  settings_version=F("settings_version") + 1)
    project.refresh_from_db(fields=["settings_version"])
    project_settings_saved(project)
