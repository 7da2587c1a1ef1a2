"""Symbols: names → positions (with ambiguity answered by the candidates) and outlines."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from driveros.semantic._client import LanguageServerError
from driveros.semantic._positions import line_of

if TYPE_CHECKING:
    from driveros.semantic._session import ServerSession

_KINDS = [
    "file",
    "module",
    "namespace",
    "package",
    "class",
    "method",
    "property",
    "field",
    "constructor",
    "enum",
    "interface",
    "function",
    "variable",
    "constant",
    "string",
    "number",
    "boolean",
    "array",
    "object",
    "key",
    "null",
    "enum-member",
    "struct",
    "event",
    "operator",
    "type-parameter",
]
#: Candidates listed when a name is ambiguous.
MAX_CANDIDATES = 20


def kind_name(kind: Any) -> str:
    return _KINDS[kind - 1] if isinstance(kind, int) and 1 <= kind <= len(_KINDS) else "symbol"


@dataclass(frozen=True)
class Candidate:
    """A symbol a name may mean: where its name is (1-based line and character column)."""

    name: str
    kind: str
    path: str
    line: int
    column: int
    container: str = ""
    inside: bool = True

    def describe(self) -> str:
        within = f" (in {self.container})" if self.container else ""
        return f"{self.path}:{self.line}:{self.column}: {self.kind} {self.name}{within}"

    def matches(self, symbol: str) -> bool:
        head, _, last = symbol.rpartition(".")
        names = {self.name, self.name.rpartition(".")[2]}
        if last not in names and symbol not in names:
            return False
        if not head or symbol == self.name:
            return True
        qualified = f"{self.container}.{self.name}" if self.container else self.name
        return qualified.endswith(symbol) or self.container.endswith(head)


def resolve(symbol: str, cands: list[Candidate], *, where: str) -> Candidate:
    """The one candidate ``symbol`` names; :class:`LanguageServerError` listing the
    candidates when it names several, or saying none was found."""
    found = list(dict.fromkeys(c for c in cands if c.matches(symbol)))
    if len(found) == 1:
        return found[0]
    if not found:
        raise LanguageServerError(
            f"no symbol named {symbol!r} in {where}; give path, line and column, or "
            "use symbols {query} to find its name"
        )
    shown = "\n".join(c.describe() for c in found[:MAX_CANDIDATES])
    more = len(found) - MAX_CANDIDATES
    tail = f"\n[{more} more]" if more > 0 else ""
    raise LanguageServerError(
        f"{symbol!r} is ambiguous: {len(found)} symbols have that name; give path (and line "
        f"and column), or a qualified name (Class.method):\n{shown}{tail}"
    )


def flatten(session: ServerSession, path: str, text: str, found: Any) -> list[Candidate]:
    """DocumentSymbol trees or SymbolInformation lists of one file as candidates."""
    out: list[Candidate] = []

    def walk(items: Any, container: str) -> None:
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            name = str(item.get("name", ""))
            if "selectionRange" in item:
                start = item["selectionRange"].get("start", {})
            else:
                start = (item.get("location") or {}).get("range", {}).get("start", {})
                container = str(item.get("containerName") or container)
            line, column = session.column(text, start)
            at = line_of(text, line - 1).find(name, column - 1)
            column = at + 1 if at >= 0 else column
            out.append(Candidate(name, kind_name(item.get("kind")), path, line, column, container))
            walk(item.get("children"), f"{container}.{name}" if container else name)

    walk(found, "")
    return out


def format_outline(session: ServerSession, text: str, found: Any) -> str:
    """A document's symbols, indented by nesting: ``line:column kind name detail``."""
    lines: list[str] = []

    def walk(items: Any, depth: int) -> None:
        for item in items if isinstance(items, list) else []:
            if not isinstance(item, dict):
                continue
            if "selectionRange" in item:
                start = item["selectionRange"].get("start", {})
            else:
                start = (item.get("location") or {}).get("range", {}).get("start", {})
            line, column = session.column(text, start)
            detail = (
                f" {item['detail']}"
                if isinstance(item.get("detail"), str) and item["detail"]
                else ""
            )
            kind = kind_name(item.get("kind"))
            lines.append(f"{'  ' * depth}{line}:{column} {kind} {item.get('name', '')}{detail}")
            walk(item.get("children"), depth + 1)

    walk(found, 0)
    return "\n".join(lines)
