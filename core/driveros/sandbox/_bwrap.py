"""The local tier's boundary: bubblewrap's command line, and whether bubblewrap works here.

:func:`bwrap_argv` lays out the mount namespace (docs/sandbox.md, "The local boundary"): the
system read-only, a private HOME and TMPDIR, the toolchains the allowlisted environment names
read-only, the workspace read-write at its own path; nothing else of the host. :func:`probe`
runs bubblewrap once per process (cached) and says what works, or the cause and the fix.
"""

from __future__ import annotations

import functools
import os
import pwd
import shutil
import subprocess
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from driveros._safe_open import PlantedLinkError, read_bytes

#: Top-level system directories, read-only (a symlink such as ``/bin -> usr/bin`` is copied).
SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/opt")
#: Files and directories under the read-only ``/etc`` that are masked (empty).
ETC_MASKED_FILES = ("/etc/shadow", "/etc/gshadow", "/etc/shadow-", "/etc/gshadow-", "/etc/sudoers")
ETC_MASKED_DIRS = ("/etc/ssh", "/etc/sudoers.d", "/etc/ssl/private")
#: Directories of the user's home that hold secrets: never bound, nor anything around them.
HOME_SECRETS = (
    ".ssh",
    ".aws",
    ".config",
    ".gnupg",
    ".docker",
    ".kube",
    ".azure",
    ".netrc",
    ".git-credentials",
    ".npmrc",
    ".pypirc",
    ".local/share/keyrings",
    ".local/state",
)
#: Toolchain locations in the environment that are bound whole, read-only.
WHOLE_TOOLCHAIN_VARS = (
    "PYENV_ROOT",
    "NVM_DIR",
    "RUSTUP_HOME",
    "GOROOT",
    "JAVA_HOME",
    "DOTNET_ROOT",
    "ANDROID_HOME",
    "ANDROID_SDK_ROOT",
    "GEM_HOME",
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "GOMODCACHE",
)
#: Package caches below the user's home that builds read (read-only).
HOME_CACHES = (
    ".cargo/bin",
    ".cargo/registry",
    ".cargo/git",
    "go/pkg/mod",
    ".m2/repository",
    ".gradle/caches",
    ".local/bin",
    ".local/pipx",
    ".local/share/uv/python",
    ".pyenv",
    ".nvm",
    ".rustup",
    ".cache/pip",
)
#: Where bubblewrap is looked for: system directories only, never a workspace's ``bin/``.
BWRAP_DIRS = ("/usr/bin", "/bin", "/usr/local/bin", "/usr/sbin", "/sbin")

FIX_INSTALL = (
    "install bubblewrap (Debian/Ubuntu: apt install bubblewrap; Fedora: dnf install bubblewrap)"
)
FIX_USERNS = (
    "enable unprivileged user namespaces (sysctl kernel.unprivileged_userns_clone=1; on Ubuntu "
    "24.04+ kernel.apparmor_restrict_unprivileged_userns=0 or an AppArmor profile for bwrap; in "
    "a container: run it with user namespaces allowed), or use --sandbox docker"
)
FIX_PLATFORM = "the local tier needs Linux and bubblewrap here; use --sandbox docker"


@dataclass(frozen=True)
class Probe:
    """What :func:`probe` found: ``ok`` with bubblewrap's path and version, or the cause and
    the fix (both for people)."""

    ok: bool
    bwrap: str | None = None
    version: str = ""
    cause: str = ""
    fix: str = ""

    def describe(self) -> str:
        if self.ok:
            return f"{self.version}, user namespaces"
        return f"{self.cause}: {self.fix}"


def find_bwrap(path: str | None = None, *, exclude: Iterable[Path] = ()) -> str | None:
    """bubblewrap's path: on ``path`` (absolute entries only), else in the system directories.

    Never one inside ``exclude`` (the workspace, the directories the sandbox may write, the
    user's real tree under a view), by its PATH entry or its resolved file: a repository's
    ``.venv/bin/bwrap`` on the user's activated PATH would otherwise run on the host.
    """
    roots = [Path(os.path.realpath(root)) for root in exclude]

    def planted(candidate: str) -> bool:
        real = Path(os.path.realpath(candidate))
        return any(_within(real, root) for root in roots)

    dirs = [d for d in (path or "").split(os.pathsep) if d.startswith("/")]
    for directory in [*dirs, *BWRAP_DIRS]:
        if planted(directory):
            continue
        found = shutil.which("bwrap", path=directory)
        if found and not planted(found):
            return found
    return None


@functools.cache
def probe(bwrap: str | None) -> Probe:
    """Whether ``bwrap`` can make the local tier's namespaces (cached per process).

    Blocking (runs bubblewrap twice): call it in a worker thread from async code.
    """
    if not sys.platform.startswith("linux"):
        return Probe(ok=False, cause=f"no local sandbox on {sys.platform}", fix=FIX_PLATFORM)
    if bwrap is None:
        return Probe(ok=False, cause="bubblewrap (bwrap) is not installed", fix=FIX_INSTALL)
    try:
        version = subprocess.run(
            [bwrap, "--version"], capture_output=True, text=True, timeout=10, check=False, env={}
        ).stdout.strip()
        trial = subprocess.run(
            [bwrap, *namespace_args(network=False), *_system_args(), "--", "/bin/true"],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
            env={},
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        return Probe(
            ok=False, bwrap=bwrap, cause=f"bubblewrap did not run ({exc})", fix=FIX_INSTALL
        )
    if trial.returncode != 0:
        said = trial.stderr.strip().splitlines()
        detail = said[-1] if said else f"exit {trial.returncode}"
        return Probe(
            ok=False,
            bwrap=bwrap,
            version=version,
            cause=f"bubblewrap cannot create namespaces ({detail})",
            fix=FIX_USERNS,
        )
    return Probe(ok=True, bwrap=bwrap, version=version or "bubblewrap")


def probe_local_sandbox(path: str | None = None, *, exclude: Iterable[Path] = ()) -> Probe:
    """Whether the local tier's sandbox works on this machine (``driveros doctor``): finds
    bubblewrap (on ``path``, then the system directories; never inside ``exclude``, the
    workspace) and tries it, once per process. Blocking."""
    return probe(find_bwrap(path, exclude=exclude))


def namespace_args(*, network: bool) -> list[str]:
    """Every namespace but the network's when ``network``; no capabilities, own session."""
    args = ["--unshare-user", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not network:
        args.append("--unshare-net")
    args += ["--die-with-parent", "--new-session", "--cap-drop", "ALL", "--clearenv"]
    return args


#: The most ``/var/tmp``, ``/run`` and ``/dev/shm`` get when tmpfs are bounded.
SMALL_TMPFS_BYTES = 512 << 20


def _system_args(size: int | None = None, shared: Mapping[str, Path] | None = None) -> list[str]:
    """The system directories read-only, masked secrets, private ``/dev``, ``/proc`` and
    scratch tmpfs. ``size``: every writable tmpfs is limited to that many bytes and ``/dev``
    is read-only but its device files (``/dev/shm`` a bounded tmpfs), so a command that fills
    them fails with ENOSPC instead of taking the machine's memory. ``shared``: the scratch
    places are instead these directories of one bounded tmpfs (see :attr:`Layout.shared`)."""
    args: list[str] = []
    for name in SYSTEM_DIRS:
        path = Path(name)
        if path.is_symlink():
            args += ["--symlink", str(path.readlink()), name]
        elif path.is_dir():
            args += ["--ro-bind", name, name]
    for name in ETC_MASKED_FILES:
        if Path(name).is_file():
            args += ["--ro-bind", "/dev/null", name]
    for name in ETC_MASKED_DIRS:
        if Path(name).is_dir():
            args += ["--tmpfs", name, "--remount-ro", name]
    args += ["--dev", "/dev", "--proc", "/proc"]
    if shared:  # one tmpfs for all of them, made before bubblewrap ran; /dev read-only first
        args += ["--remount-ro", "/dev"]
        for name, source in shared.items():
            args += ["--bind", str(source), name]
        return args
    # Private, empty scratch space (never the host's /tmp).
    sized = ["--size", str(size)] if size else []
    # The rarely used ones get less: together they stay a fraction of /tmp's size.
    small = ["--size", str(min(size, SMALL_TMPFS_BYTES))] if size else []
    args += [*sized, "--tmpfs", "/tmp"]  # noqa: S108
    for name in ("/var/tmp", "/run"):  # noqa: S108
        args += [*small, "--tmpfs", name]
    if size:
        args += ["--remount-ro", "/dev", *small, "--tmpfs", "/dev/shm"]  # noqa: S108
    return args


@functools.cache
def sizes_tmpfs(bwrap: str) -> bool:
    """Whether ``bwrap`` can limit a tmpfs's size (``--size``: bubblewrap 0.7 and later).
    Blocking, cached per process."""
    try:
        said = subprocess.run(
            [bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False, env={}
        )
    except (OSError, subprocess.TimeoutExpired):
        return False
    return "--size" in said.stdout + said.stderr


def _within(path: Path, root: Path) -> bool:
    return path == root or root in path.parents


#: The interpreter a venv's ``home`` must hold for its prefix to be bound.
_INTERPRETER_NAMES = ("python3", "python")


def _venv_base(venv: Path) -> Path | None:
    """The interpreter prefix a virtual environment was made from (``home`` in pyvenv.cfg).

    The file may be a repository's (a workspace ``.venv`` on the activated PATH): its
    ``home`` counts only when it holds an executable interpreter, so it cannot name any
    directory of the user's to be bound (docs/sandbox.md, "The local boundary"); only a
    regular file is read (a planted FIFO would block the sandbox's start)."""
    try:
        data = read_bytes(venv, "pyvenv.cfg")
    except (OSError, PlantedLinkError):
        return None
    text = "" if data is None else data.decode("utf-8", "replace")
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.strip() == "home" and value.strip().startswith("/"):
            home = Path(os.path.normpath(value.strip()))
            for name in _INTERPRETER_NAMES:
                exe = home / name
                if exe.is_file() and os.access(exe, os.X_OK):
                    return home.parent
            return None
    return None


def _other_homes(home: Path | None) -> list[Path]:
    """Every other account's home directory (not ``home``, this account's or ``/``): never
    bound. This account's own secrets are kept out by :data:`HOME_SECRETS`."""
    try:
        entries = pwd.getpwall()
        own = {Path(os.path.normpath(pwd.getpwuid(os.getuid()).pw_dir)), Path("/"), home}
    except (KeyError, OSError):  # pragma: no cover - no passwd database
        return []
    homes = {Path(os.path.normpath(e.pw_dir)) for e in entries if e.pw_dir.startswith("/")}
    return sorted(h for h in homes if h not in own)


def toolchain_dirs(env: Mapping[str, str], *, home: Path | None) -> list[Path]:
    """Directories the allowlisted environment's toolchains live in (not yet filtered)."""
    found: list[Path] = []
    for entry in env.get("PATH", "").split(os.pathsep):
        if not entry.startswith("/"):
            continue
        path = Path(entry)
        found.append(path)
        if (path.parent / "pyvenv.cfg").is_file():  # a venv's bin: the venv and its base
            found.append(path.parent)
    for name in WHOLE_TOOLCHAIN_VARS:
        value = env.get(name, "")
        if value.startswith("/"):
            found.append(Path(value))
    for name in ("CARGO_HOME", "GOPATH"):
        value = env.get(name, "")
        if value.startswith("/"):
            sub = ("bin", "registry", "git") if name == "CARGO_HOME" else ("bin", "pkg/mod")
            found += [Path(value, part) for part in sub]
    for name in ("GEM_PATH",):
        found += [Path(p) for p in env.get(name, "").split(os.pathsep) if p.startswith("/")]
    if home is not None:
        found += [home / rel for rel in HOME_CACHES]
        found += sorted((home / ".local/lib").glob("python3*"))
    # The interpreters virtual environments were made from.
    found += [base for venv in list(found) if (base := _venv_base(venv)) is not None]
    return found


def allowed_toolchains(
    candidates: Iterable[Path], *, home: Path | None, workspace: Path, hidden: Sequence[Path]
) -> list[Path]:
    """The ``candidates`` that may be bound read-only: existing directories outside the
    workspace and the system directories, never the user's home itself or one of its
    parents, nothing holding or inside a secret directory, a ``hidden`` path or another
    account's home."""
    secrets = [home / rel for rel in HOME_SECRETS] if home is not None else []
    blocked = [*secrets, *hidden, Path("/run"), Path("/var/run"), Path("/proc")]
    system = [Path(d) for d in SYSTEM_DIRS]
    others = _other_homes(home)
    chosen: list[Path] = []
    for candidate in candidates:
        path = Path(os.path.normpath(candidate))
        if path in (Path("/"), Path("/tmp"), Path("/var/tmp")) or (  # noqa: S108
            home is not None and _within(home, path)
        ):
            continue
        if any(_within(path, s) for s in system) or _within(path, workspace):
            continue
        if any(_within(path, o) or _within(o, path) for o in others):
            continue
        if any(_within(path, b) or _within(b, path) for b in blocked):
            continue
        if not path.is_dir() or path in chosen:
            continue
        chosen.append(path)
    return outermost(chosen)


def outermost(paths: Iterable[Path]) -> list[Path]:
    """``paths`` once each, in order, less those inside another: a directory bound read-only
    brings what is inside it (a venv on PATH that is also driveros' own environment is one
    mount, not two)."""
    unique = list(dict.fromkeys(Path(os.path.normpath(p)) for p in paths))
    return [p for p in unique if not any(q != p and _within(p, q) for q in unique)]


@dataclass(frozen=True)
class Layout:
    """What a local sandbox's bubblewrap makes visible (see :func:`bwrap_argv`)."""

    workspace: Path
    home: Path
    tmp: Path
    network: bool = False
    #: Bound read-only at their own path (toolchains, the run's environment directories).
    read_only: tuple[Path, ...] = ()
    #: Extra writable directories.
    writable: tuple[Path, ...] = ()
    #: Added folders (``--add-dir DIR[:rw]``): (where its files are, its path inside, writable).
    folders: tuple[tuple[Path, Path, bool], ...] = ()
    #: Inside the workspace, bound read-only over it (driveros.sandbox._guards).
    protected: tuple[Path, ...] = ()
    #: False: the workspace is bound read-only (a sandbox that discards its writes, where
    #: no overlay can be laid: see driveros.sandbox._oneshot).
    workspace_writable: bool = True
    #: Bytes: HOME and TMPDIR are tmpfs of this size instead of the host directories, as are
    #: ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm`` (a sandbox that discards its writes:
    #: nothing it writes reaches the host's disk, nor takes unbounded memory). None: unbounded.
    tmpfs_bytes: int | None = None
    #: Bytes: ``/tmp``, ``/var/tmp``, ``/run`` and ``/dev/shm`` are tmpfs of this size and the
    #: rest of ``/dev`` read-only (every sandbox where bubblewrap has ``--size``: a command
    #: that fills them gets ENOSPC instead of taking the machine's memory). None: unbounded.
    system_tmpfs_bytes: int | None = None
    #: ``/tmp``, ``/var/tmp``, ``/run``, ``/dev/shm`` (keys) bound from these directories of
    #: one bounded tmpfs that also holds HOME and TMPDIR, bound at their paths (a sandbox that
    #: discards its writes: its helper mounted the tmpfs, driveros.sandbox._oneshot), and the
    #: rest of ``/dev`` read-only; the sizes above then do not apply.
    shared: Mapping[str, Path] | None = None


def bwrap_argv(bwrap: str, layout: Layout) -> list[str]:
    """bubblewrap's arguments up to (not including) ``--`` and the command."""
    size = None if layout.shared else layout.tmpfs_bytes
    system = _system_args(size or layout.system_tmpfs_bytes, layout.shared)
    args = [bwrap, *namespace_args(network=layout.network), *system]
    if layout.network:
        resolv = Path("/etc/resolv.conf")
        if resolv.is_symlink() and (target := resolv.resolve()).is_file():
            args += ["--ro-bind", str(target), str(target)]
    for path in outermost(layout.read_only):
        args += ["--ro-bind-try", str(path), str(path)]
    if size and layout.home.parent == layout.tmp.parent:  # one tmpfs holds both
        args += ["--size", str(size), "--tmpfs", str(layout.home.parent)]
        args += ["--dir", str(layout.home), "--dir", str(layout.tmp)]
    else:
        for path in (layout.home, layout.tmp):
            bound = ["--bind", str(path), str(path)]
            args += ["--size", str(size), "--tmpfs", str(path)] if size else bound
    for path in layout.writable:
        args += ["--bind", str(path), str(path)]
    for source, target, writable in layout.folders:
        args += ["--bind" if writable else "--ro-bind", str(source), str(target)]
    bind = "--bind" if layout.workspace_writable else "--ro-bind"
    args += [bind, str(layout.workspace), str(layout.workspace)]
    for path in layout.protected:
        args += ["--ro-bind-try", str(path), str(path)]
    args += ["--chdir", str(layout.workspace)]
    return args


def interpreter_dirs() -> list[Path]:
    """What the in-sandbox process host's interpreter needs: its prefix, read-only."""
    real = Path(os.path.realpath(sys.executable))
    dirs = [Path(sys.base_prefix), real.parent]
    return [d for d in dirs if not any(_within(d, Path(s)) for s in SYSTEM_DIRS)]
