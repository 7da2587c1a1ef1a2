"""A static import graph of the workspace's Python files, to tell which edits pytest can feel.

pytest's collection (and a test run) only executes the test files, conftest.py files and
what they import. An edit confined to modules outside that import closure cannot change
the outcome, so the previous pytest result still holds. The analysis over-approximates on
purpose (a module name matches every file whose dotted path ends with it) and gives up
(returns ``None``) when any file in the closure imports dynamically.
"""

from __future__ import annotations

import ast
import asyncio
import posixpath
import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from driveros._errors import SandboxError
from driveros.sandbox import Sandbox

_DYNAMIC_NAMES = frozenset(
    {"importlib", "__import__", "pkgutil", "import_module", "entry_points", "pytest_plugins"}
)
#: Past this many Python files the graph is not worth building; pytest always reruns.
MAX_FILES = 5000
#: CPython 3.11's parser is not safe to run in several threads at once ("AST constructor
#: recursion depth mismatch"): every ``ast.parse`` here holds this lock.
_PARSE_LOCK = threading.Lock()


@dataclass(frozen=True)
class _Info:
    modules: frozenset[str]
    dynamic: bool


def _dotted(path: str) -> str:
    stem = path[: -len(".py")] if path.endswith(".py") else path
    if stem.endswith("/__init__"):
        stem = stem[: -len("/__init__")]
    return stem.replace("/", ".")


def _mentions_dynamic(node: ast.AST) -> bool:
    if isinstance(node, ast.Name):
        return node.id in _DYNAMIC_NAMES
    if isinstance(node, ast.Attribute):
        return node.attr in _DYNAMIC_NAMES
    if isinstance(node, ast.alias):
        return node.name.split(".")[0] in _DYNAMIC_NAMES
    return False


def parse_imports(source: str, path: str) -> _Info | None:
    """The absolute module names a file imports (None when it does not parse)."""
    try:
        with _PARSE_LOCK:
            tree = ast.parse(source, filename=path)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    package = _dotted(posixpath.dirname(path) + "/__init__.py") if "/" in path else ""
    if path.endswith("/__init__.py"):
        package = _dotted(path)
    modules: set[str] = set()
    dynamic = False
    # __import__("x") / import_module("x") with a literal name is an ordinary import
    literal: set[int] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
            and not node.args[0].value.startswith(".")
            and _mentions_dynamic(node.func)
        ):
            modules.add(node.args[0].value)
            literal.add(id(node.func))
    for node in ast.walk(tree):
        if id(node) in literal:
            continue
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".") if package else []
                keep = len(parts) - (node.level - 1)
                prefix = ".".join(parts[: max(keep, 0)])
                base = f"{prefix}.{base}".strip(".") if base else prefix
            if base:
                modules.add(base)
            modules.update(f"{base}.{a.name}".strip(".") for a in node.names if a.name != "*")
        elif _mentions_dynamic(node):
            dynamic = True
    return _Info(frozenset(modules), dynamic)


class ImportGraph:
    """Import facts per Python file, reparsed only when a file's content hash changes; the
    edges between them are resolved once per change of the facts, not per query."""

    def __init__(self) -> None:
        self._facts: dict[str, tuple[str, _Info | None]] = {}
        #: Per file, the files importing it executes, and the inverse (None: to resolve).
        self._edge_map: dict[str, set[str]] | None = None
        self._importer_map: dict[str, set[str]] | None = None

    async def update(self, sandbox: Sandbox, hashes: Mapping[str, str]) -> bool:
        """Parse new or changed ``.py`` files; False when the workspace is too big for it."""
        py = {p: h for p, h in hashes.items() if p.endswith(".py")}
        if len(py) > MAX_FILES:
            return False
        stale = [p for p, h in py.items() if self._facts.get(p, ("", None))[0] != h]
        sem = asyncio.Semaphore(16)

        async def one(path: str) -> None:
            async with sem:
                try:
                    text = await sandbox.read_file(path)
                except SandboxError:
                    self._facts[path] = (py[path], None)
                    return
            info = await asyncio.to_thread(parse_imports, text, path)
            self._facts[path] = (py[path], info)

        async with asyncio.TaskGroup() as tg:
            for path in stale:
                tg.create_task(one(path))
        gone = set(self._facts) - set(py)
        for path in gone:
            del self._facts[path]
        if stale or gone:
            self._edge_map = self._importer_map = None
        return True

    def complete(self) -> bool:
        """Whether every known file parsed (an unparsable file's imports are unknown)."""
        return all(info is not None for _digest, info in self._facts.values())

    def closure(self, roots: Iterable[str]) -> set[str] | None:
        """Files reachable by imports from ``roots`` (with their packages' ``__init__``),
        or None when a reachable file imports dynamically or does not parse."""
        edges = self._edges()
        seen: set[str] = set()
        todo = [r for r in roots if r in self._facts]
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            info = self._facts[path][1]
            if info is None or info.dynamic:
                return None
            todo.extend(p for p in edges[path] if p not in seen)
        return seen

    def dependents(self, targets: Iterable[str]) -> set[str]:
        """``targets`` and every known file that imports one of them, directly or not.

        Only meaningful once :meth:`closure` of the importers in question is not None
        (no dynamic imports on the way); over-approximates like the rest of the graph.
        """
        importers = self._importers()
        seen: set[str] = set()
        todo = list(targets)
        while todo:
            path = todo.pop()
            if path in seen:
                continue
            seen.add(path)
            todo.extend(p for p in importers.get(path, ()) if p not in seen)
        return seen

    def _importers(self) -> dict[str, set[str]]:
        """Per known file, the files importing it directly (the inverse of :meth:`_edges`)."""
        if self._importer_map is None:
            importers: dict[str, set[str]] = defaultdict(set)
            for path, deps in self._edges().items():
                for dep in deps:
                    importers[dep].add(path)
            self._importer_map = importers
        return self._importer_map

    def _edges(self) -> dict[str, set[str]]:
        """Per known file, the files importing it executes (its imports' modules, their
        parent packages, and its own packages' ``__init__``)."""
        if self._edge_map is None:
            self._edge_map = self._resolve_edges()
        return self._edge_map

    def _resolve_edges(self) -> dict[str, set[str]]:
        by_tail: dict[str, list[str]] = defaultdict(list)
        for path in self._facts:
            dotted = _dotted(path)
            by_tail[dotted.rsplit(".", 1)[-1]].append(path)

        def resolve(module: str) -> list[str]:
            found = []
            parts = module.split(".")
            for i in range(1, len(parts) + 1):  # the module and every parent package
                name = ".".join(parts[:i])
                for path in by_tail.get(parts[i - 1], ()):
                    dotted = _dotted(path)
                    if dotted == name or dotted.endswith("." + name):
                        found.append(path)
            return found

        edges: dict[str, set[str]] = {}
        for path, (_digest, info) in self._facts.items():
            out: set[str] = set()
            for module in info.modules if info is not None else ():
                out.update(resolve(module))
            parent = posixpath.dirname(path)
            while parent:  # importing a.b.c runs a/__init__.py and a/b/__init__.py
                init = f"{parent}/__init__.py"
                if init in self._facts:
                    out.add(init)
                parent = posixpath.dirname(parent)
            out.discard(path)
            edges[path] = out
        return edges
