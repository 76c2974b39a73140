"""Sends the build's scratch folders (`build/`, `*.egg-info`) to a temporary folder, not the checkout.

pyproject.toml holds the rest. This folder is the package itself, so this script is kept out of it.
"""
import atexit
import shutil
import tempfile
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

SCRATCH = tempfile.mkdtemp(prefix="tambo-clientsdk-build-")
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)


class BuildWithoutThisScript(build_py):
    def find_package_modules(self, package, package_dir):
        return [m for m in super().find_package_modules(package, package_dir) if m[:2] != ("clientsdk", "setup")]


setup(
    cmdclass={"build_py": BuildWithoutThisScript},
    options={"build": {"build_base": str(Path(SCRATCH) / "build")}, "egg_info": {"egg_base": SCRATCH}},
)
