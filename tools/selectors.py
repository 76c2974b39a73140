"""Reading a project's server-side tools (built-in tools switched on, MCP servers) in one statement.

The run path reads them together with the thread it locks (runs/services.py): `tool_annotations`
are two subqueries that any query with a project id column can carry, each folding the rows into a
JSON array, so the toolbox costs no statement of its own.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from django.db.models import Aggregate, JSONField, OuterRef, Subquery
from django.db.models.functions import JSONObject

from tools.models import McpServer, ProjectTool

_MCP_FIELDS = ("name", "transport", "command", "args", "env", "url", "headers")


class _JsonArray(Aggregate):
    """The rows' values as one JSON array (PostgreSQL jsonb_agg, SQLite json_group_array)."""

    function = "JSONB_AGG"
    output_field = JSONField()

    def as_sqlite(self, compiler, connection, **extra_context):
        return super().as_sql(compiler, connection, function="JSON_GROUP_ARRAY", **extra_context)


def tool_annotations(project_ref: str = "project_id") -> dict[str, Subquery]:
    """Annotations (`tools_enabled`, `tools_mcp`) reading the project's tools in the same statement;
    `project_ref` names the project id column of the outer query. Read them with `project_tools`."""
    names = (ProjectTool.objects.filter(project_id=OuterRef(project_ref), enabled=True)
             .values("project_id").annotate(rows=_JsonArray("name")).values("rows"))
    servers = (McpServer.objects.filter(project_id=OuterRef(project_ref), enabled=True)
               .values("project_id").annotate(rows=_JsonArray(JSONObject(**{f: f for f in _MCP_FIELDS})))
               .values("rows"))
    return {"tools_enabled": Subquery(names), "tools_mcp": Subquery(servers)}


@dataclass
class ProjectTools:
    enabled: list[str] = field(default_factory=list)
    mcp_configs: list[Any] = field(default_factory=list)  # tools.mcp_client.McpServerConfig


def project_tools(row: Any) -> ProjectTools:
    """The tools read through `tool_annotations` on `row` (a model instance carrying them)."""
    from tools.mcp_client import McpServerConfig  # the MCP SDK takes a second to import: only when used

    configs = []
    for server in _json(row.tools_mcp):
        server = {key: _json(value) if key in ("args", "env", "headers") else value for key, value in server.items()}
        configs.append(McpServerConfig(
            name=server["name"], transport=server["transport"], command=server["command"] or None,
            args=tuple(server["args"] or ()), env=dict(server["env"] or {}) or None,
            url=server["url"] or None, headers=dict(server["headers"] or {}) or None,
        ))
    return ProjectTools(enabled=list(_json(row.tools_enabled)), mcp_configs=configs)


def project_tools_of(project: Any) -> ProjectTools:
    """The project's tools, one statement (written once: tools/statements.py)."""
    from tools.statements import project_tools_read  # it builds on this module

    return project_tools_read(project.pk)


def _json(value: Any) -> Any:
    # SQLite hands nested JSON columns back as text inside the aggregate; NULL means no rows.
    if value is None:
        return []
    return json.loads(value) if isinstance(value, str) else value
