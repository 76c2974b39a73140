"""A project's server-side tools (built-in tools switched on, MCP servers), as the run path reads them.

The run path reads them together with the API key or the thread it locks: tools/statements.py has
the two columns (subqueries folding the rows into JSON arrays) any statement with a project id can
carry, so the toolbox costs no statement of its own; `project_tools` turns them into ProjectTools.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

_MCP_FIELDS = ("id", "name", "transport", "command", "args", "env", "url", "headers", "auth", "oauth_scopes",
               "oauth_client_id", "oauth_client_secret")


@dataclass
class ProjectTools:
    enabled: list[str] = field(default_factory=list)
    mcp_configs: list[Any] = field(default_factory=list)  # tools.mcp_client.McpServerConfig


def project_tools(row: Any) -> ProjectTools:
    """The tools read by tools/statements.py `tool_columns` on `row` (attributes `tools_enabled`, `tools_mcp`)."""
    from tools.mcp_client import McpServerConfig  # the MCP SDK takes a second to import: only when used

    configs = []
    for server in _json(row.tools_mcp):
        server = {key: _json(value) if key in ("args", "env", "headers") else value for key, value in server.items()}
        configs.append(McpServerConfig(
            name=server["name"], transport=server["transport"], command=server["command"] or None,
            args=tuple(server["args"] or ()), env=dict(server["env"] or {}) or None,
            url=server["url"] or None, headers=dict(server["headers"] or {}) or None,
            auth=server["auth"] or "none", server_id=server["id"], oauth_scopes=server["oauth_scopes"] or "",
            oauth_client_id=server["oauth_client_id"] or "", oauth_client_secret=server["oauth_client_secret"] or "",
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
