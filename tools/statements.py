"""The project's server tools as columns of a statement that reads the project row: no statement of
their own on the run path (runs/start.py reads them with the API key, projects/statements.py), and
none to compile (core/statements.py); read back with `tools_of_values` (tools/selectors.py
`project_tools`).
"""
from __future__ import annotations

from typing import Any, Sequence

from django.db import connections

from core.statements import execute, quote
from projects.models import Project
from tools.models import McpServer, ProjectTool
from tools.selectors import _MCP_FIELDS, ProjectTools, project_tools


def tool_columns(vendor: str, project_id: str = 'p."id"') -> str:
    """SQL for the two columns (enabled built-in tool names, enabled MCP servers) of the project
    whose id is the SQL expression `project_id`."""
    if vendor == "postgresql":
        array, pairs = "JSONB_AGG", "JSONB_BUILD_OBJECT"
    else:
        array, pairs = "JSON_GROUP_ARRAY", "JSON_OBJECT"
    fields = ", ".join(f"'{f}', m.{quote(f)}" for f in _MCP_FIELDS)
    return (f"(SELECT {array}(t.{quote('name')}) FROM {quote(ProjectTool._meta.db_table)} t "
            f"WHERE t.{quote('project_id')} = {project_id} AND t.{quote('enabled')}), "
            f"(SELECT {array}({pairs}({fields})) FROM {quote(McpServer._meta.db_table)} m "
            f"WHERE m.{quote('project_id')} = {project_id} AND m.{quote('enabled')})")


class _Row:
    def __init__(self, enabled: Any, mcp: Any):
        self.tools_enabled, self.tools_mcp = enabled, mcp


def tools_of_values(values: Sequence[Any]) -> ProjectTools:
    """The tools from the two values `tool_columns` read."""
    return project_tools(_Row(values[0], values[1]))


_SQL: dict[str, str] = {}


def project_tools_read(project_id: str, *, using: str = "default") -> ProjectTools:
    """A project's tools, one statement (for a caller that did not read them with another row)."""
    vendor = connections[using].vendor
    sql = _SQL.get(vendor)
    if sql is None:
        sql = _SQL[vendor] = (f"SELECT {tool_columns(vendor)} FROM {quote(Project._meta.db_table)} p "
                              f"WHERE p.{quote('id')} = %s")
    rows, _ = execute(sql, [project_id], using=using)
    return tools_of_values(rows[0]) if rows else ProjectTools()
