"""The architecture page (docs/architecture.md) names every top-level package and import layer as they are:
its folder table, from its title to its first section, and the sentence on the import order."""
from __future__ import annotations

import re
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def architecture() -> str:
    text = (ROOT / "docs" / "architecture.md").read_text()
    return text[text.index("# Architecture\n"):text.index("\n## ")]


def test_the_folder_table_lists_exactly_the_top_level_packages():
    listed = set(re.findall(r"^\| `([a-z_]+)/`", architecture(), re.M))
    packages = {p.parent.name for p in ROOT.glob("*/__init__.py")} - {"tests", "bench"}
    assert listed >= packages, f"packages missing from the folder table of docs/architecture.md: {sorted(packages - listed)}"
    assert all((ROOT / name).is_dir() for name in listed), listed


def test_the_import_order_in_the_text_is_the_contracts_order():
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    [layers] = [c["layers"] for c in config["contracts"] if c["type"] == "layers"]
    names = [name.strip() for layer in layers for name in layer.split("|")]
    sentence = architecture().split("Imports point one way", 1)[1].split("\n\n", 1)[0]
    mentioned = [n for n in re.findall(r"`([a-z_]+)`", sentence) if n in names]
    assert mentioned[:len(names)] == names
