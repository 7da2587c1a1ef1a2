"""Which language server serves which files, and where driveros installed the default ones.

Defaults: Python → basedpyright, TypeScript/JavaScript → typescript-language-server (with
typescript), Go → gopls. The user adds or replaces servers in
``~/.config/driveros/language-servers.toml``::

    [language_servers.rust]
    command = ["rust-analyzer"]
    filetypes = ["rs"]

A workspace's files never name a server (they are input, not configuration).
"""

from __future__ import annotations

import logging
import os
import shutil
import sys
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath

from driveros._paths import user_config_dir, user_home

_log = logging.getLogger(__name__)

#: The user's file of extra language servers (in the user's config directory).
USER_SERVERS_FILE = "language-servers.toml"
#: Where `.ci/run` and scripts/install-language-servers.sh put the npm servers.
NPM_DIR = "lsp-servers"


@dataclass(frozen=True)
class ServerSpec:
    """One language server: how to start it (stdio) and which files it answers for."""

    name: str
    command: tuple[str, ...]
    #: File extensions without the dot.
    filetypes: tuple[str, ...]
    #: Extension → LSP languageId (the name of the server's language otherwise).
    language_ids: Mapping[str, str] = field(default_factory=dict)
    #: Shown when the server is missing.
    install: str = ""

    def language_id(self, path: str) -> str:
        ext = PurePosixPath(path).suffix.lstrip(".")
        return self.language_ids.get(ext, ext or self.name)

    def serves(self, path: str) -> bool:
        return PurePosixPath(path).suffix.lstrip(".") in self.filetypes


_TS_IDS = {
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "tsx": "typescriptreact",
    "js": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "jsx": "javascriptreact",
}

DEFAULT_SERVERS: tuple[ServerSpec, ...] = (
    ServerSpec(
        "basedpyright",
        # File-based cancellation declared, as pyright's own VS Code client does; nothing
        # creates the folder, so `$/cancelRequest` stays the way to cancel. Without it, a
        # references request cancelled before the server dispatched it fails every later one
        # ("this._token.cancel is not a function": pyright keeps the cancelled token source).
        ("basedpyright-langserver", "--stdio", "--cancellationReceive=file:driveros"),
        ("py", "pyi"),
        {"py": "python", "pyi": "python"},
        install="pip install basedpyright (in the environment the sandbox sees, or driveros's own)",
    ),
    ServerSpec(
        "typescript-language-server",
        ("typescript-language-server", "--stdio"),
        tuple(_TS_IDS),
        _TS_IDS,
        install="npm install typescript-language-server typescript "
        "(scripts/install-language-servers.sh puts them where driveros finds them)",
    ),
    ServerSpec("gopls", ("gopls",), ("go",), {"go": "go"}, install="apt-get install gopls"),
)


def user_cache_dir(environ: Mapping[str, str] | None = None) -> Path:
    """``$XDG_CACHE_HOME/driveros``, or ``~/.cache/driveros`` (as `.ci/run` writes it)."""
    env = os.environ if environ is None else environ
    xdg = env.get("XDG_CACHE_HOME")
    base = Path(xdg) if xdg and Path(xdg).is_absolute() else user_home(env) / ".cache"
    return base / "driveros"


def npm_bin(environ: Mapping[str, str] | None = None) -> Path:
    """The ``node_modules/.bin`` of driveros's own npm-installed servers."""
    return user_cache_dir(environ) / NPM_DIR / "node_modules" / ".bin"


def _own_bins(environ: Mapping[str, str] | None) -> list[Path]:
    return [Path(sys.prefix) / "bin", npm_bin(environ)]


def host_candidates(spec: ServerSpec, environ: Mapping[str, str] | None = None) -> list[str]:
    """Absolute paths where driveros's setup installed ``spec``'s program (tried inside the
    sandbox after its own PATH)."""
    found = []
    for directory in _own_bins(environ):
        path = directory / spec.command[0]
        if os.access(path, os.X_OK):
            found.append(str(path))
    return found


def server_mounts(environ: Mapping[str, str] | None = None) -> list[Path]:
    """Directories the local sandbox binds read-only so the servers driveros installed run
    inside it: its own environment (basedpyright) and the ``node_modules`` of its npm
    directory (the TypeScript server; never the directory itself, where an ``.npmrc`` may
    hold a token). Only those that hold a default server."""
    out: list[Path] = []
    venv_bin = Path(sys.prefix) / "bin"
    if (venv_bin / "basedpyright-langserver").exists():
        out.append(Path(sys.prefix))
    npm = user_cache_dir(environ) / NPM_DIR
    if (npm / "node_modules" / ".bin" / "typescript-language-server").exists():
        out.append(npm / "node_modules")
    return out


def load_user_servers(environ: Mapping[str, str] | None = None) -> list[ServerSpec]:
    """The user's ``[language_servers.NAME]`` tables; a malformed entry is logged and
    skipped."""
    path = user_config_dir(environ) / USER_SERVERS_FILE
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return []
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        _log.warning("%s: %s", path, exc)
        return []
    tables = data.get("language_servers", {})
    out = []
    for name, table in tables.items() if isinstance(tables, dict) else ():
        spec = _user_spec(str(name), table)
        if spec is None:
            _log.warning("%s: [language_servers.%s] needs command and filetypes", path, name)
        else:
            out.append(spec)
    return out


def _user_spec(name: str, table: object) -> ServerSpec | None:
    if not isinstance(table, dict):
        return None
    command = table.get("command")
    if isinstance(command, str):
        command = command.split()
    filetypes = table.get("filetypes")
    if not (isinstance(command, list) and command and all(isinstance(c, str) for c in command)):
        return None
    if not (isinstance(filetypes, list) and all(isinstance(f, str) for f in filetypes)):
        return None
    ids = table.get("language_id")
    exts = tuple(f.lstrip(".") for f in filetypes)
    language_ids = {e: ids for e in exts} if isinstance(ids, str) else {}
    return ServerSpec(name, tuple(command), exts, language_ids, install=f"install {command[0]}")


def merge_servers(extra: Sequence[ServerSpec]) -> tuple[ServerSpec, ...]:
    """The defaults with ``extra`` first: a user's server for an extension wins."""
    names = {s.name for s in extra}
    return (*extra, *(s for s in DEFAULT_SERVERS if s.name not in names))


def server_for(servers: Sequence[ServerSpec], path: str) -> ServerSpec | None:
    return next((s for s in servers if s.serves(path)), None)


def doctor_rows(environ: Mapping[str, str] | None = None) -> list[tuple[str, bool, str]]:
    """(server, found, where or how to install) for each configured server, as the host sees
    it (``driveros doctor``)."""
    rows = []
    path = (environ or os.environ).get("PATH", "")
    for spec in merge_servers(load_user_servers(environ)):
        where = shutil.which(spec.command[0], path=path) or next(
            iter(host_candidates(spec, environ)), None
        )
        rows.append((spec.name, where is not None, where or spec.install))
    return rows
