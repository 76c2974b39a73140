"""A real MCP server for tests, built on the `mcp` package's MCPServer.

Run it as `python tests/support/mcp_server.py stdio` or
`python tests/support/mcp_server.py http --port N` (streamable HTTP at http://127.0.0.1:N/mcp), or
`python tests/support/mcp_server.py sse --port N` (the older HTTP+SSE transport at http://127.0.0.1:N/sse).
`tests/support/mcp_fixtures.py` starts the HTTP variant for a test. With `MCP_TEST_START_LOG` set
in its environment, each process appends its pid to that file on start (tests count processes).
"""

from __future__ import annotations

import argparse
import os
import struct
import zlib

import anyio
from mcp.server.mcpserver import Context, Image, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import EmbeddedResource, TextResourceContents

server = MCPServer("tambo-test-server", log_level="WARNING")


def tiny_png() -> bytes:
    """A valid 1x1 red PNG, built here so the test needs no binary fixture."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", 1, 1, 8, 2, 0, 0, 0)  # 1x1, 8-bit RGB
    pixels = zlib.compress(b"\x00\xff\x00\x00")  # filter byte + one red pixel
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")


@server.tool(description="Add two integers.")
def add(a: int, b: int) -> int:
    return a + b


@server.tool(description="Return the text unchanged.")
def echo(text: str) -> str:
    return text


@server.tool(description="Return a tiny PNG image.")
def image() -> Image:
    return Image(data=tiny_png(), format="png")


@server.tool(description="Return an embedded text resource.")
def document() -> EmbeddedResource:
    return EmbeddedResource(
        type="resource",
        resource=TextResourceContents(uri="memo://greeting", mime_type="text/plain", text="hello from a resource"),
    )


@server.tool(description="Always fails.")
def fail() -> str:
    raise ToolError("this tool always fails")


@server.tool(description="Never returns.")
async def hang() -> str:
    await anyio.sleep_forever()
    return "unreachable"


@server.tool(description="Return the value of an environment variable of the server process.")
def env_var(name: str) -> str:
    return os.environ.get(name, "")


@server.tool(description="Return the value of an HTTP request header (empty over stdio).")
def header(name: str, ctx: Context) -> str:
    headers = ctx.headers or {}
    return headers.get(name.lower(), "")


@server.resource("memo://note", mime_type="text/plain", description="A short text note.")
def note() -> str:
    return "the note says: buy milk"


@server.resource("image://red-dot", mime_type="image/png", description="A 1x1 red PNG.")
def red_dot() -> bytes:
    return tiny_png()


@server.prompt(description="Ask for a summary of a topic.")
def summarise(topic: str) -> str:
    return f"Please summarise {topic} in one line."


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("transport", choices=["stdio", "http", "sse"])
    parser.add_argument("--port", type=int, default=8765)
    args = parser.parse_args()
    if os.environ.get("MCP_TEST_START_LOG"):
        with open(os.environ["MCP_TEST_START_LOG"], "a") as log:
            log.write(f"{os.getpid()}\n")
    if args.transport == "stdio":
        server.run("stdio")
    elif args.transport == "sse":
        server.run("sse", host="127.0.0.1", port=args.port)
    else:
        server.run("streamable-http", host="127.0.0.1", port=args.port)


if __name__ == "__main__":
    main()
