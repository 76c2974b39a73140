"""The live child processes of a process, read from /proc (the MCP servers a server or a test started)."""
from __future__ import annotations

from pathlib import Path


def children_running(parent: int, script: Path) -> list[int]:
    """Live processes whose parent is `parent` and whose command line names `script`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if stat[0] != "Z" and int(stat[1]) == parent and str(script).encode() in cmdline:
            found.append(int(entry.name))
    return found
