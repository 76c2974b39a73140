"""The images and files of a run request, checked (and MCP resources read) before the run starts.

Called by the run views before the lock is taken, so no transaction is held while a blob is decoded
or an MCP server answers (runs/services.py stores what this leaves in the body). The checks
themselves are core/content_parts.py; docs/images-and-voice.md says what reaches the model.
"""
from __future__ import annotations

import asyncio
from typing import Any, Iterator

from django.conf import settings

from clientsdk import wire
from core.content_parts import check_parts, check_resource
from core.db import db_call
from core.sanity import InputError
from projects.models import Project
from tools.selectors import project_tools_of


async def run_content_check(*, project: Project, body: wire.CreateRunBody) -> None:
    """Checks every resource part of `body` and replaces each MCP resource (`@server:uri`) by what its
    server answers to `resources/read`. Raises InputError (400) naming the part."""
    if not body_has_resources(body):
        return  # plain text: nothing to decode
    lists = list(_part_lists(body))
    # Decoding up to MAX_RUN_BYTES of base64 is CPU work: off the event loop.
    await asyncio.to_thread(_check_all, lists)
    wanted = [(f"{field}[{i}].resource", b.resource) for field, blocks in lists for i, b in enumerate(blocks)
              if isinstance(b, wire.InResourceBlock) and b.resource.blob is None and b.resource.text is None
              and (b.resource.uri or "").startswith("@")]
    if wanted:
        await _read_mcp_resources(project, wanted)


def body_has_resources(body: wire.CreateRunBody) -> bool:
    """Whether any message of `body` carries a resource part (an image, a file, an MCP resource)."""
    return any(isinstance(b, wire.InResourceBlock) for _, blocks in _part_lists(body) for b in blocks)


def _part_lists(body: wire.CreateRunBody) -> Iterator[tuple[str, list[Any]]]:
    yield "message.content", body.message.content
    spec = getattr(body, "thread", None)
    for index, message in enumerate((spec.initial_messages or []) if spec is not None else []):
        yield f"thread.initialMessages[{index}].content", message.content


def _check_all(lists: list[tuple[str, list[Any]]]) -> None:
    for field, blocks in lists:
        check_parts([{"type": b.type, "resource": b.resource.wire()} if isinstance(b, wire.InResourceBlock)
                     else {"type": b.type} for b in blocks], field)


async def _read_mcp_resources(project: Project, wanted: list[tuple[str, wire.Resource]]) -> None:
    from tools.mcp_client import McpClientError
    from tools.mcp_resources import read_resource, split_mcp_uri

    servers = {config.name: config for config in (await db_call(project_tools_of, project)).mcp_configs}
    for field, resource in wanted:
        name, inner = split_mcp_uri(resource.uri)
        config = servers.get(name)
        if config is None:
            raise InputError(f"{field}.uri", f"{field}.uri names the MCP server {name!r}, which this project "
                             "does not have (add it in the admin, MCP servers).")
        try:
            read = await read_resource(config, inner, timeout=settings.MCP_TIMEOUT)
        except McpClientError as exc:
            raise InputError(f"{field}.uri", f"{field}.uri: {exc}") from exc
        resource.mime_type = read.get("mimeType") or resource.mime_type
        resource.text, resource.blob = read.get("text"), read.get("blob")
        check_resource(resource.wire(), field)
