"""What the sandbox has: the workspace root as it sees it and the tools found on it.

One ``command -v`` probe per plan; a project's own ``.venv/bin`` or ``node_modules/.bin`` copy
is preferred over one on PATH.
"""

from __future__ import annotations

import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

_PY_TOOLS = (
    "ruff",
    "mypy",
    "pyright",
    "basedpyright",
    "pytest",
    "flake8",
    "black",
    "stubtest",
    "python3",
    "python",
)
_NODE_TOOLS = ("tsc", "eslint", "tape", "mocha", "vitest", "jest", "prettier")
_VENVS = (".venv/bin", "venv/bin")


@dataclass(frozen=True)
class Probe:
    """What the sandbox answered: the workspace root as it sees it and the tools it has."""

    roots: tuple[str, ...] = ()
    found: Mapping[str, str] = field(default_factory=dict)

    def first(self, *candidates: str) -> str | None:
        return next((c for c in candidates if c in self.found), None)


def tool(probe: Probe, name: str) -> str | None:
    """The project's own (virtualenv) copy of a Python tool, else one on PATH."""
    return probe.first(*(f"{v}/{name}" for v in _VENVS), name)


def own_tool(probe: Probe, name: str) -> str | None:
    """The project's own (virtualenv) copy of a Python tool only."""
    return probe.first(*(f"{v}/{name}" for v in _VENVS))


def node_bin(probe: Probe, d: str, name: str) -> str | None:
    """The project's own ``node_modules/.bin`` copy of ``name`` in ``d``, else one on PATH."""
    prefix = "" if d == "." else f"{d}/"
    if f"{prefix}node_modules/.bin/{name}" in probe.found:
        return f"./node_modules/.bin/{name}"
    return probe.first(name)


def probe_candidates(files: Sequence[str], node_dirs: Sequence[str]) -> list[str]:
    """Every executable name or path worth asking the sandbox about."""
    names: list[str] = []
    for name in _PY_TOOLS:
        names.extend(f"{v}/{name}" for v in _VENVS)
        names.append(name)
    for d in node_dirs:
        prefix = "" if d == "." else f"{d}/"
        names.extend(f"{prefix}node_modules/.bin/{t}" for t in _NODE_TOOLS)
    names.extend([*_NODE_TOOLS, "node", "go", "cargo"])
    return list(dict.fromkeys(names))


def probe_script(candidates: Sequence[str]) -> str:
    """A POSIX sh script printing the root (``pwd``, ``pwd -P``) and each found candidate."""
    quoted = " ".join(shlex.quote(c) for c in candidates)
    return (
        'printf "root\\t%s\\n" "$(pwd)" "$(pwd -P)"; '
        f"for c in {quoted}; do "
        'p=$(command -v "$c" 2>/dev/null) && printf "tool\\t%s\\t%s\\n" "$c" "$p"; '
        "done; true"
    )


def parse_probe(stdout: str) -> Probe:
    roots: list[str] = []
    found: dict[str, str] = {}
    for line in stdout.splitlines():
        parts = line.split("\t")
        if len(parts) == 2 and parts[0] == "root" and parts[1]:
            roots.append(parts[1])
        elif len(parts) == 3 and parts[0] == "tool":
            found[parts[1]] = parts[2]
    return Probe(roots=tuple(dict.fromkeys(roots)), found=found)
