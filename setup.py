"""The dynamic parts of the build, which pyproject.toml cannot state.

- The dependencies: pyproject.toml's `[tool.tambo.server]` list plus the Python client, its own
  distribution in ./clientsdk, as a path dependency (`tambo-clientsdk @ file:///<checkout>/clientsdk`).
  pip accepts only an absolute file: URL there, so `pip install .` installs both and never looks the
  client's name up on an index.
- The page's `templates/` and `static/` folders, which stay at the top of the checkout, go into the
  wheel inside `tambo_project/` (settings.py looks there when the server runs from an install).
- The build's scratch folders (`build/`, `*.egg-info`) go to a temporary folder, not the checkout.
"""
import atexit
import shutil
import tempfile
import tomllib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = Path(__file__).resolve().parent
SERVER = tomllib.loads((HERE / "pyproject.toml").read_text())["tool"]["tambo"]["server"]
SCRATCH = tempfile.mkdtemp(prefix="tambo-build-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


class BuildWithPage(build_py):
    def run(self):
        super().run()
        if not self.editable_mode:
            for folder in ("templates", "static"):
                self.copy_tree(str(HERE / folder), str(Path(self.build_lib) / "tambo_project" / folder))


setup(
    install_requires=[*SERVER["dependencies"], f"tambo-clientsdk @ {(HERE / 'clientsdk').as_uri()}"],
    cmdclass={"build_py": BuildWithPage},
    options={"build": {"build_base": str(Path(SCRATCH) / "build")}, "egg_info": {"egg_base": SCRATCH}},
)
