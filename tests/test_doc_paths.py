"""Every file a docstring, comment, README or template names exists: a module moved or removed must
take its mentions with it (a docstring citing `runs/watcher.py` long after it was gone sent readers
looking for a file that was not there)."""
from __future__ import annotations

import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SCANNED = {".py", ".md", ".js", ".mjs", ".html", ".toml", ".yml", ".yaml", ".sh"}
SKIPPED_DIRS = {".git", ".venv", "node_modules", "__pycache__", "vendor", ".pytest_cache"}
# A file name: letters, digits, `_`, `-`, `.`, and `/` between folders, ending in a kind we check.
MENTION = re.compile(r"(?<![\w./-])([A-Za-z0-9_][\w./-]*\.(?:py|js|mjs|md))\b")
# Names that are not files of this repository.
NOT_OURS = {
    "tambo-v1.md", "chat-completions.md",  # the specs, kept beside the repository
    "highlight.js", "Highlight.js",  # the library's name
    "redoc.standalone.js",  # the ReDoc bundle the API reference page loads from its CDN
    "sql_elsewhere.py",  # the module tests/test_import_contracts.py plants in a copy of the tree
}


def _scanned_files() -> list[Path]:
    # The repository's own files: tracked, or new and not ignored. Build output (the React app's
    # bundle, egg-info) is ignored by git and names files of node_modules that are not ours.
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.splitlines()
    files = []
    for name in listed:
        path = ROOT / name
        if path == Path(__file__).resolve():
            continue  # names missing files on purpose
        if (path.is_file() and not set(Path(name).parts) & SKIPPED_DIRS
                and (path.suffix in SCANNED or path.parent.name == "bin")):
            files.append(path)
    return files


def _exists(mention: str, mentioned_in: Path, names: set[str]) -> bool:
    if "/" not in mention:
        return mention in names
    # A path from the repository's root, from the mentioning file's folder, or (templates'
    # `{% static %}`) from static/.
    return any((base / mention).exists() for base in (ROOT, mentioned_in.parent, ROOT / "static"))


def test_every_file_named_in_the_sources_and_docs_exists():
    files = _scanned_files()
    names = {path.name for path in ROOT.rglob("*") if not set(path.relative_to(ROOT).parts) & {".git", ".venv"}}
    missing = []
    for path in files:
        for number, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines(), 1):
            for mention in MENTION.findall(line):
                if mention not in NOT_OURS and not _exists(mention, path, names):
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {mention}")

    assert not missing, "Files named but not in the tree:\n" + "\n".join(missing)


def test_the_check_finds_a_missing_file(tmp_path):
    mentioned_in = tmp_path / "module.py"

    assert MENTION.findall('"""See runs/watcher.py and `core/db.py`."""') == ["runs/watcher.py", "core/db.py"]
    assert not _exists("runs/watcher.py", mentioned_in, set())
    assert _exists("core/db.py", mentioned_in, set())


# A link to a section: `docs/protocol.md#resumable-runs`, `[text](deployment.md#the-image)`, `(#install)`.
ANCHORED = re.compile(r"(?<![\w./-])((?:[A-Za-z0-9_][\w./-]*\.md)?)#([a-z0-9][a-z0-9_-]*)")
LINK = re.compile(r"\]\(([^)\s]+)\)")


def heading_anchors(markdown: str) -> set[str]:
    """The anchors GitHub gives a Markdown file's headings: lower case, punctuation dropped, spaces as `-`."""
    anchors = set()
    for line in markdown.splitlines():
        if line.startswith("#"):
            title = line.lstrip("#").strip().lower()
            anchors.add(re.sub(r"[^\w\- ]", "", title).replace(" ", "-"))
    return anchors


def _target(mention: str, mentioned_in: Path) -> Path | None:
    if not mention:
        return mentioned_in if mentioned_in.suffix == ".md" else None
    for base in (mentioned_in.parent, ROOT):
        if (base / mention).is_file():
            return base / mention
    return None


def test_every_section_link_names_a_heading_of_its_file():
    broken = []
    for path in _scanned_files():
        text = path.read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            mentions = ANCHORED.findall(line) if path.suffix == ".md" else [
                m for m in ANCHORED.findall(line) if m[0]]  # in code, only `file.md#anchor` is a link
            for mention, anchor in mentions:
                target = _target(mention, path)
                if target is not None and anchor not in heading_anchors(target.read_text()):
                    broken.append(f"{path.relative_to(ROOT)}:{number}: {mention}#{anchor}")
    assert not broken, "Links to sections that do not exist:\n" + "\n".join(broken)


def test_every_relative_markdown_link_exists():
    missing = []
    for path in _scanned_files():
        if path.suffix != ".md":
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            for link in LINK.findall(line):
                file_part = link.split("#", 1)[0]
                if file_part and "://" not in link and not link.startswith("mailto:") and not (
                        path.parent / file_part).exists():
                    missing.append(f"{path.relative_to(ROOT)}:{number}: {link}")
    assert not missing, "Links to files that do not exist:\n" + "\n".join(missing)


def test_the_section_check_finds_a_missing_heading():
    assert heading_anchors("# Deployment\n## Scaling: processes, machines, PgBouncer\n## `tambo-server`") == {
        "deployment", "scaling-processes-machines-pgbouncer", "tambo-server"}
    assert ANCHORED.findall("see docs/protocol.md#resumable-runs and (#install)") == [
        ("docs/protocol.md", "resumable-runs"), ("", "install")]
