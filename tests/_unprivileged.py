"""Running part of a test as an unprivileged user (uid 65534, ``nobody``) from any checkout.

CI runs as root, and a checkout (with its venv, and a pyenv interpreter) may live where other
users cannot read: a ``mktemp -d`` directory, anything under ``/root``. The unprivileged
process then gets what it needs from places it can read: an interpreter of the same
``major.minor`` that it may run, and :func:`readable_site`, a world-readable tree of hard links
(copies across file systems) to ``driveros`` and every distribution it needs. A test skips
with the exact reason only when no such interpreter exists; it never fails for where the
clone lives.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as md
import os
import re
import shutil
import site
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from pathlib import Path

from packaging.requirements import Requirement

UID = 65534


def drop() -> list[str]:
    """The ``setpriv`` prefix that runs a command as uid/gid 65534 with no groups."""
    return ["setpriv", f"--reuid={UID}", f"--regid={UID}", "--clear-groups"]


def _runs(
    argv: Sequence[str], env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*drop(), *argv], capture_output=True, text=True, check=False, env=env, cwd="/"
    )


def python_for_nobody() -> tuple[str | None, str]:
    """An interpreter uid 65534 can run with this one's ``major.minor`` (None and why not)."""
    version = f"{sys.version_info[0]}.{sys.version_info[1]}"
    tried = [sys.executable, f"/usr/bin/python{version}", f"/usr/local/bin/python{version}"]
    for py in dict.fromkeys(tried):
        if _runs([py, "-S", "-c", "pass"]).returncode == 0:
            return py, ""
    return None, (
        f"no Python {version} that uid {UID} may run: tried {', '.join(tried)} "
        "(the venv's interpreter lives where other users cannot read; "
        f"install python{version} system-wide to run these tests)"
    )


def imports_as_nobody(py: str, sites: Sequence[str], modules: Sequence[str]) -> str:
    """'' when uid 65534 can import ``modules`` from ``sites`` with ``py``, else its stderr."""
    code = (
        "import site, sys\n"
        f"for p in {list(sites)!r}:\n    site.addsitedir(p)\n"
        f"for m in {list(modules)!r}:\n    __import__(m)\n"
    )
    done = _runs([py, "-S", "-c", code], env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")})
    return "" if done.returncode == 0 else (done.stderr.strip() or f"exit {done.returncode}")


def _key(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _distributions(root: str) -> list[md.Distribution]:
    """``root`` and every distribution it requires (no extras, markers of this machine)."""
    found: dict[str, md.Distribution] = {}
    todo = [root]
    while todo:
        name = todo.pop()
        if _key(name) in found:
            continue
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        found[_key(name)] = dist
        for text in dist.requires or []:
            req = Requirement(text)
            if req.marker is None or req.marker.evaluate({"extra": ""}):
                todo.append(req.name)
    return list(found.values())


def _place(src: Path, dst: Path) -> None:
    if dst.exists():  # listed twice (a package both installed and imported): never overwrite
        return
    dst.parent.mkdir(parents=True, exist_ok=True, mode=0o755)
    try:
        os.link(src, dst)
    except OSError:  # another file system, or links refused: a copy
        shutil.copy2(src, dst)


def _tree(src: Path, dst: Path) -> None:
    for dirpath, _dirs, names in os.walk(src):
        for name in names:
            here = Path(dirpath, name)
            _place(here, dst / here.relative_to(src))


def readable_site(dest: Path, package: str = "driveros") -> Path:
    """``dest`` (made ``0755``) holding ``package``'s sources and the installed files of every
    distribution it needs, for :func:`site.addsitedir`; ``.pth`` files are left out (an
    editable install's points back into the unreadable checkout)."""
    dest.mkdir(mode=0o755, parents=True, exist_ok=True)
    dest.chmod(0o755)
    for dist in _distributions(package):
        for file in dist.files or []:
            rel = Path(str(file))
            src = Path(str(dist.locate_file(file)))
            if rel.parts[:1] == ("..",) or rel.suffix == ".pth" or not src.is_file():
                continue
            _place(src, dest / rel)
    source = Path(str(__import__(package).__file__)).parent  # an editable install too
    _tree(source, dest / package)
    for dirpath, dirs, _names in os.walk(dest):
        for name in dirs:
            Path(dirpath, name).chmod(0o755)
    return dest


@contextlib.contextmanager
def sites_for_nobody(py: str, modules: Sequence[str]) -> Iterator[list[str]]:
    """The site directories to hand uid 65534: this venv's when it can read them, else a
    readable copy (removed when the generator is closed)."""
    sites = [p for p in site.getsitepackages() if Path(p).is_dir()]
    if not imports_as_nobody(py, sites, modules):
        yield sites
        return
    top = Path(tempfile.mkdtemp(prefix="driveros-nobody-site-"))
    try:
        top.chmod(0o755)
        copy = readable_site(top / "site")
        problem = imports_as_nobody(py, [str(copy)], modules)
        if problem:
            raise RuntimeError(f"uid {UID} cannot import {modules} from a readable copy: {problem}")
        yield [str(copy)]
    finally:
        shutil.rmtree(top, ignore_errors=True)
