"""Sandbox test fixtures: workspaces with an outside world next to them, and snapshots of it."""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest

from driveros.sandbox import LocalSandbox


def snapshot(root: Path) -> dict[str, str]:
    """Every entry under ``root`` with its kind, mode, link target or content hash."""
    result: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        for name in sorted(dirnames + filenames):
            path = Path(dirpath) / name
            info = path.lstat()
            rel = str(path.relative_to(root))
            if stat.S_ISLNK(info.st_mode):
                result[rel] = f"link:{os.readlink(path)}"
            elif stat.S_ISREG(info.st_mode):
                digest = hashlib.sha256(path.read_bytes()).hexdigest()
                result[rel] = f"file:{oct(info.st_mode)}:{info.st_nlink}:{digest}"
            else:
                result[rel] = f"other:{oct(info.st_mode)}"
    return result


def process_alive(pid: int) -> bool:
    """Whether ``pid`` is a live (not zombie) process."""
    try:
        data = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return False
    return data.rsplit(")", 1)[1].split()[0] not in ("Z", "X")


def _live_cmdlines() -> Iterator[tuple[int, bytes]]:
    """(pid, raw ``cmdline``) of every live process on the host."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            raw = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if process_alive(int(entry.name)):
            yield int(entry.name), raw


def host_pids(*argv: str) -> list[int]:
    """Host pids of the live processes whose argv is exactly ``argv``: commands of the local
    tier run in their own PID namespace, so the pid a command sees (``$$``, ``$!``) is not
    one the host knows."""
    wanted = [a.encode() for a in argv]
    return [pid for pid, raw in _live_cmdlines() if raw.split(b"\0")[:-1] == wanted]


def pids_naming(marker: str) -> list[int]:
    """Host pids of the live processes whose command line names ``marker`` anywhere."""
    return [pid for pid, raw in _live_cmdlines() if marker.encode() in raw]


@pytest.fixture
def outside(tmp_path: Path) -> Path:
    """A directory beside the workspace holding a secret file: escapes aim here."""
    out = tmp_path / "outside"
    out.mkdir()
    (out / "secret.txt").write_text("top secret\n")
    (out / "sub").mkdir()
    (out / "sub" / "inner.txt").write_text("inner\n")
    return out


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "hello.txt").write_text("hello world\n")
    (ws / "src").mkdir()
    (ws / "src" / "app.py").write_text("def main():\n    return 42\n")
    return ws


@pytest.fixture
async def local(workspace: Path) -> AsyncIterator[LocalSandbox]:
    async with LocalSandbox(workspace) as sandbox:
        yield sandbox


def docker_problem(image: str = "driveros-sandbox:latest") -> str | None:
    """Why the docker tier cannot be tested here, or None when it can."""
    try:
        import docker
        from docker.errors import DockerException, ImageNotFound
    except ImportError:  # pragma: no cover - docker is a dependency
        return "the docker SDK is not installed"
    try:
        client = docker.from_env()
    except DockerException as exc:
        return f"no Docker daemon answers: {exc}"
    try:
        client.ping()
        client.api.inspect_image(image)
    except ImageNotFound:
        return f"the sandbox image {image} is missing (run `make sandbox-image`)"
    except DockerException as exc:
        return f"no Docker daemon answers: {exc}"
    finally:
        client.close()
    return None


def require_docker() -> None:
    """Skip with the reason when docker is unusable, or fail when CI requires it."""
    problem = docker_problem()
    if problem is None:
        return
    if os.environ.get("DRIVEROS_REQUIRE_DOCKER") == "1":
        pytest.fail(f"DRIVEROS_REQUIRE_DOCKER=1 but {problem}")
    pytest.skip(problem)


def daemon_runtimes() -> set[str]:
    import docker

    client = docker.from_env()
    try:
        return set(client.api.info().get("Runtimes") or {})
    finally:
        client.close()


def labelled_containers() -> set[str]:
    """Ids of every driveros sandbox container the daemon knows."""
    import docker

    client = docker.from_env()
    try:
        return {
            c["Id"]
            for c in client.api.containers(all=True, filters={"label": "driveros.sandbox=1"})
        }
    finally:
        client.close()


#: The uid:gid docker tests give their workspaces, so the container user is not root.
SANDBOX_UID = 1000


def make_workspace(base: Path) -> Path:
    """A workspace owned by SANDBOX_UID (when we are root), with a couple of files."""
    base.mkdir(parents=True, exist_ok=True)
    (base / "hello.txt").write_text("hello world\n")
    (base / "src").mkdir(exist_ok=True)
    (base / "src" / "app.py").write_text("def main():\n    return 42\n")
    if os.geteuid() == 0:
        for path in [base, *base.rglob("*")]:
            os.chown(path, SANDBOX_UID, SANDBOX_UID, follow_symlinks=False)
    return base
