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
