"""The package's own PEP 517 build backend: standard library only.

``pip install ./clients/python`` builds in an isolated environment into
which it installs the backend's requirements from an index. This backend
requires nothing (``requires = []`` in pyproject.toml), so the install
works offline (``PIP_NO_INDEX=1``) in a fresh ``python3 -m venv``, whatever
setuptools the venv has or lacks. It writes a pure-Python wheel of
``baton_client/`` (and an sdist, and an editable wheel for ``pip install
-e``); nothing is written into the source tree.
"""
from __future__ import annotations

import base64
import hashlib
import io
import os
import re
import tarfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "baton_client"
DIST = "baton_client"          # the wheel's name part (normalized)
NAME = "baton-client"          # the project's name
SUMMARY = "Client of the Baton cluster coordinator's admin API (standard library only)"
REQUIRES_PYTHON = ">=3.8"
TAG = "py3-none-any"


def _version() -> str:
    with open(os.path.join(ROOT, PACKAGE, "_version.py"), encoding="utf-8") as f:
        m = re.search(r'__version__\s*=\s*"([^"]+)"', f.read())
    if not m:
        raise RuntimeError("no __version__ in baton_client/_version.py")
    return m.group(1)


def _metadata() -> str:
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return (f"Metadata-Version: 2.1\nName: {NAME}\nVersion: {_version()}\nSummary: {SUMMARY}\n"
            f"Requires-Python: {REQUIRES_PYTHON}\nLicense: see the Baton repository\n"
            f"Description-Content-Type: text/markdown\n\n{readme}")


def _package_files():
    """(path in the archive, absolute path) of every file of the package."""
    base = os.path.join(ROOT, PACKAGE)
    for dirpath, dirnames, filenames in os.walk(base):
        dirnames[:] = sorted(d for d in dirnames if d != "__pycache__")
        for name in sorted(filenames):
            if name.endswith((".py", ".typed")):
                full = os.path.join(dirpath, name)
                yield os.path.relpath(full, ROOT).replace(os.sep, "/"), full


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _write_wheel(wheel_directory: str, entries) -> str:
    version = _version()
    dist_info = f"{DIST}-{version}.dist-info"
    filename = f"{DIST}-{version}-{TAG}.whl"
    wheel = f"Wheel-Version: 1.0\nGenerator: baton_build\nRoot-Is-Purelib: true\nTag: {TAG}\n"
    entries = list(entries) + [
        (f"{dist_info}/METADATA", _metadata().encode("utf-8")),
        (f"{dist_info}/WHEEL", wheel.encode("utf-8")),
        (f"{dist_info}/top_level.txt", f"{PACKAGE}\n".encode("utf-8")),
    ]
    record = "".join(f"{path},{_hash(data)},{len(data)}\n" for path, data in entries)
    record += f"{dist_info}/RECORD,,\n"
    entries.append((f"{dist_info}/RECORD", record.encode("utf-8")))
    os.makedirs(wheel_directory, exist_ok=True)
    stamp = time.gmtime(max(time.time(), 315532800))[:6]
    with zipfile.ZipFile(os.path.join(wheel_directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for path, data in entries:
            info = zipfile.ZipInfo(path, date_time=stamp)
            info.external_attr = 0o644 << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            z.writestr(info, data)
    return filename


# --- PEP 517 / 660 hooks -------------------------------------------------------
def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    entries = []
    for arc, full in _package_files():
        with open(full, "rb") as f:
            entries.append((arc, f.read()))
    return _write_wheel(wheel_directory, entries)


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    # A .pth file naming this directory: the source tree is imported in place.
    return _write_wheel(wheel_directory, [(f"_{DIST}_editable.pth", (ROOT + "\n").encode("utf-8"))])


def build_sdist(sdist_directory, config_settings=None):
    version = _version()
    base = f"{DIST}-{version}"
    filename = f"{base}.tar.gz"
    os.makedirs(sdist_directory, exist_ok=True)
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("README.md", os.path.join(ROOT, "README.md")),
             ("build_backend/baton_build.py", os.path.abspath(__file__))] + list(_package_files())
    with tarfile.open(os.path.join(sdist_directory, filename), "w:gz", format=tarfile.PAX_FORMAT) as tar:
        pkg_info = _metadata().encode("utf-8")
        info = tarfile.TarInfo(f"{base}/PKG-INFO")
        info.size, info.mtime, info.mode = len(pkg_info), int(time.time()), 0o644
        tar.addfile(info, io.BytesIO(pkg_info))
        for arc, full in files:
            tar.add(full, arcname=f"{base}/{arc}", recursive=False)
    return filename
