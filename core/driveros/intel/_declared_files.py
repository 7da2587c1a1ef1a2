"""How each build file declares commands, read as text (never evaluated): ``Makefile``
targets, ``package.json`` scripts, INI sections (``tox.ini``, ``setup.cfg``), tox envs, nox
sessions and CI workflow steps. :mod:`driveros.intel._declared` maps the commands to checks.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Sequence

#: Lines of one file read at most.
MAX_LINES = 2000


def make_targets(text: str) -> dict[str, list[str]]:
    """Makefile target → its recipe lines (tab-indented, continuations joined)."""
    targets: dict[str, list[str]] = {}
    current: list[str] | None = None
    pending = ""
    for raw in text.splitlines()[:MAX_LINES]:
        if raw.startswith("\t") and current is not None:
            line = pending + raw.strip()
            if line.endswith("\\"):
                pending = line[:-1] + " "
                continue
            pending = ""
            current.append(line)
            continue
        m = re.match(r"^([A-Za-z0-9_.\-/ ]+?)\s*::?(?!=)(.*)$", raw)
        if m is None:
            if raw.strip() and not raw.startswith("#"):
                current = None
            continue
        current = []
        for name in m.group(1).split():
            targets.setdefault(name, current)
        deps = m.group(2).split(";", 1)
        if len(deps) == 2 and deps[1].strip():
            current.append(deps[1].strip())
    return targets


def npm_scripts(text: str) -> dict[str, str]:
    try:
        data = json.loads(text) if text.strip() else {}
    except ValueError:
        return {}
    scripts = data.get("scripts") if isinstance(data, dict) else None
    if not isinstance(scripts, dict):
        return {}
    out = {k: v for k, v in scripts.items() if isinstance(k, str) and isinstance(v, str)}
    if "no test specified" in out.get("test", ""):
        del out["test"]  # npm init's placeholder
    return out


def ini_sections(text: str) -> dict[str, dict[str, str]]:
    """A forgiving INI reader: section → key → value (continuation lines joined by newline)."""
    sections: dict[str, dict[str, str]] = {}
    section: dict[str, str] | None = None
    key: str | None = None
    for raw in text.splitlines()[:MAX_LINES]:
        if not raw.strip() or raw.lstrip().startswith(("#", ";")):
            continue
        m = re.match(r"^\[([^\]]+)\]\s*$", raw)
        if m is not None:
            section = sections.setdefault(m.group(1).strip(), {})
            key = None
            continue
        if section is None:
            continue
        if raw[:1].isspace() and key is not None:
            section[key] += "\n" + raw.strip()
            continue
        kv = re.match(r"^([^=:]+?)\s*[=:]\s*(.*)$", raw)
        if kv is not None:
            key = kv.group(1).strip()
            section[key] = kv.group(2).strip()
    return sections


def tox_envs(text: str) -> dict[str, list[str]]:
    envs: dict[str, list[str]] = {}
    for name, values in ini_sections(text).items():
        if name == "testenv" or name.startswith("testenv:"):
            commands = values.get("commands", "")
            lines = [ln.rstrip("\\").strip() for ln in commands.splitlines() if ln.strip()]
            envs[name] = lines
    return envs


def tox_selected(args: Sequence[str]) -> list[str]:
    for i, a in enumerate(args):
        if a == "-e" and i + 1 < len(args):
            return [f"testenv:{e}" for e in args[i + 1].split(",")]
        if a.startswith("-e") and len(a) > 2:
            return [f"testenv:{e}" for e in a[2:].split(",")]
    return []


def nox_commands(text: str) -> list[str]:
    """``session.run("pytest", "-x")`` calls as command lines (string literals only)."""
    lines = []
    for call in re.finditer(r"session\.run\(([^)]*)\)", text[:200_000]):
        words = re.findall(r"""(?:^|,)\s*(['"])(.*?)\1""", call.group(1))
        if words:
            lines.append(shlex.join(w for _q, w in words))
    return lines


def workflow_runs(text: str, key: str = "run:") -> list[str]:
    """Shell lines of CI steps: ``run: cmd`` and ``run: |`` blocks (GitHub), script items."""
    lines: list[str] = []
    block_indent: int | None = None
    for raw in text.splitlines()[:MAX_LINES]:
        stripped = raw.strip()
        indent = len(raw) - len(raw.lstrip())
        if block_indent is not None:
            if stripped and indent > block_indent:
                lines.append(stripped)
                continue
            block_indent = None
        m = re.match(r"^-?\s*run:\s*(.*)$", stripped) if key == "run:" else None
        if m is not None:
            value = m.group(1).strip()
            if value in ("|", ">", "|-", ">-", "|+"):
                block_indent = indent
            elif value:
                lines.append(value.strip("'\""))
        elif key == "-" and stripped.startswith("- ") and indent >= 4:
            lines.append(stripped[2:].strip("'\""))
    return lines
