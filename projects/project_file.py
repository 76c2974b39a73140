"""The project file (docs/projects.md): parse, check and apply it as a whole.

`project_file_parse` reads YAML (a JSON file is YAML too) and validates every entry against
`ProjectFile`, refusing the whole file with the path of each fault (`projects[0].models[1].provider`).
`project_file_apply` then creates or updates each named project in one transaction and returns what
changed, by project; a second run of the same file changes nothing and returns nothing. A key left
out of an entry keeps the project's current value (give the empty value to clear it); projects not
named are not touched. Literal secrets are stored encrypted (projects/secrets.py); a literal equal
to what is stored already counts as unchanged, so applying stays idempotent.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import yaml
from django.db import transaction
from pydantic import Field, ValidationError, field_validator, model_validator

from projects.config import ProjectSettings, SettingsModel, project_settings_dump, project_settings_save
from projects.secrets import is_stored, secret_resolve, secret_store
from projects.user_tokens import user_token_settings_errors


class UserTokensEntry(SettingsModel):
    issuer: str = ""
    audience: str = ""
    jwks_url: str = ""
    claim: str = Field(default="sub", min_length=1)


class ProjectEntry(ProjectSettings):
    name: str = Field(min_length=1, max_length=200)
    system_prompt: str | None = None
    max_tool_calls_per_turn: int | None = Field(default=None, ge=0)
    user_tokens: UserTokensEntry | None = None

    @model_validator(mode="after")
    def _combinations(self) -> "ProjectEntry":
        # allowedModels without a models list: the server's endpoint answers the allowed names.
        if (self.max_input_tokens and self.max_output_tokens and self.max_output_tokens >= self.max_input_tokens):
            raise ValueError("maxOutputTokens must be below maxInputTokens (the output budget comes out of it)")
        seen = set()
        for spec in self.models:
            if (spec.provider, spec.label_model, spec.base_url or spec.url) in seen:
                raise ValueError(f"the model {spec.provider}:{spec.label_model} is listed twice")
            seen.add((spec.provider, spec.label_model, spec.base_url or spec.url))
        return self


class ProjectFile(SettingsModel):
    projects: list[ProjectEntry]

    @field_validator("projects")
    @classmethod
    def _unique_names(cls, projects: list[ProjectEntry]) -> list[ProjectEntry]:
        names = [entry.name for entry in projects]
        duplicate = next((n for n in names if names.count(n) > 1), None)
        if duplicate is not None:
            raise ValueError(f"the project name {duplicate!r} appears twice")
        return projects


class ProjectFileError(Exception):
    """The file is refused; `faults` are "path: what is wrong" lines."""

    def __init__(self, faults: list[str]):
        super().__init__("\n".join(faults))
        self.faults = faults


def fault_path(loc: tuple) -> str:
    """('projects', 0, 'models', 1, 'provider') → 'projects[0].models[1].provider'."""
    path = ""
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif not str(part).startswith(("function-", "literal[", "union[")):
            path += ("." if path else "") + str(part)
    return path or "(file)"


def project_file_parse(text: str) -> ProjectFile:
    """The validated file; raises ProjectFileError naming every fault's path."""
    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        raise ProjectFileError([f"(file): not valid YAML or JSON{where}"]) from None
    try:
        parsed = ProjectFile.model_validate(data) if isinstance(data, dict) else None
    except ValidationError as exc:
        raise ProjectFileError([f"{fault_path(e['loc'])}: {e['msg']}" for e in exc.errors()]) from None
    if parsed is None:
        raise ProjectFileError(["(file): expected a mapping with a `projects` list"])
    faults = []
    for index, entry in enumerate(parsed.projects):
        if entry.user_tokens is not None:
            errors = user_token_settings_errors(hs256_secret="", public_key="", jwks_url=entry.user_tokens.jwks_url,
                                                claim=entry.user_tokens.claim)
            faults += [f"projects[{index}].userTokens: {message}" for message in errors.values()]
    if faults:
        raise ProjectFileError(faults)
    return parsed


@dataclass
class Change:
    name: str
    created: bool
    keys: list[str]  # the file's keys whose value changed

    def __str__(self) -> str:
        return f"{self.name}: created" if self.created else f"{self.name}: {', '.join(self.keys)} changed"


_COLUMNS = {"systemPrompt": "system_prompt", "maxToolCallsPerTurn": "max_tool_calls_per_turn"}
_TOKEN_COLUMNS = {"issuer": "user_token_issuer", "audience": "user_token_audience",
                  "jwksUrl": "user_token_jwks_url", "claim": "user_token_claim"}


def project_file_apply(parsed: ProjectFile) -> list[Change]:
    """Creates or updates every project of the file, in one transaction; returns the changes."""
    from projects.models import Project

    changes = []
    with transaction.atomic():
        for entry in parsed.projects:
            project = Project.objects.select_for_update().filter(name=entry.name).first()
            created = project is None
            if created:
                project = Project.objects.create(name=entry.name)
            keys = _apply_entry(project, entry)
            if created or keys:
                changes.append(Change(entry.name, created, keys))
    return changes


def _apply_entry(project, entry: ProjectEntry) -> list[str]:
    given = entry.model_dump(by_alias=True, exclude_unset=True, mode="json")
    changed: list[str] = []
    columns: dict[str, Any] = {}
    for key, column in _COLUMNS.items():
        if key in given and getattr(project, column) != given[key]:
            columns[column] = given[key]
            changed.append(key)
    if "userTokens" in given:
        tokens = UserTokensEntry.model_validate(given["userTokens"]).model_dump(by_alias=True)
        diff = {column: tokens[key] for key, column in _TOKEN_COLUMNS.items() if getattr(project, column) != tokens[key]}
        if diff:
            columns.update(diff)
            changed.append("userTokens")
    if columns:
        type(project).objects.filter(pk=project.pk).update(**columns)
    stored = dict(project.settings or {})
    wanted = dict(stored)
    for key in set(given) - {"name", "userTokens", *_COLUMNS}:
        wanted[key] = _with_stored_secrets(key, given[key], stored.get(key))
    # Through the schema, so the stored form is the compact one the admin writes too.
    document = project_settings_dump(ProjectSettings.model_validate(wanted))
    if document != project_settings_dump(ProjectSettings.model_validate(stored)):
        changed += sorted(k for k in set(document) | set(stored) if document.get(k) != stored.get(k))
        project_settings_save(project, ProjectSettings.model_validate(document))
    return changed


def _with_stored_secrets(key: str, value: Any, stored: Any) -> Any:
    """`value` with its literal apiKeys encrypted; a literal equal to the stored one keeps the stored
    ciphertext (Fernet tokens differ on every encryption)."""
    if key == "models" and isinstance(value, list):
        old = stored if isinstance(stored, list) else []
        return [_spec_secret(spec, old[i] if i < len(old) else None) for i, spec in enumerate(value)]
    if key == "transcription" and isinstance(value, dict):
        return _spec_secret(value, stored)
    return value


def _spec_secret(spec: dict, old: Any) -> dict:
    old = old if isinstance(old, dict) else {}
    if isinstance(spec.get("headers"), dict):
        # An agent's header values are secrets as an apiKey is (a bearer token, say).
        before = old.get("headers") if isinstance(old.get("headers"), dict) else {}
        spec = {**spec, "headers": {name: _secret(value, before.get(name)) for name, value in spec["headers"].items()}}
    if not spec.get("apiKey"):
        return spec
    return {**spec, "apiKey": _secret(spec["apiKey"], old.get("apiKey"))}


def _secret(value: str, previous: Any) -> str:
    """`value` to store: an `env:` reference or stored value as it is, a literal encrypted (or the
    `previous` ciphertext when it holds the same literal)."""
    if value.startswith("env:") or is_stored(value):
        return value
    if is_stored(previous):
        try:
            if secret_resolve(previous) == value:
                return previous
        except Exception:  # noqa: BLE001 - an unreadable old value is simply replaced
            pass
    return secret_store(value)
