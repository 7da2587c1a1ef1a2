"""What the wrapper changes in the messages it forwards: pure functions on plain JSON data.

Only a handful of messages are rewritten (docs/wrap.md): the
``initialize`` result (capabilities merged), the ``textDocument/codeAction`` result (both
servers' actions), ``publishDiagnostics`` for a document both servers report on, and the
settings driveros receives (only its own ``driveros`` section). Everything else passes as
the bytes it came in.
"""

from __future__ import annotations

from typing import Any

from driveros_lsp._text import Encoding, Hunk, Pos, apply_hunks
from driveros_lsp.protocol import SETTINGS_SECTION

#: The encoding of LSP positions when a server names none.
DEFAULT_ENCODING = "utf-16"


def position_encoding(result: Any) -> str:
    """The position encoding an ``initialize`` result chose (utf-16 when it names none)."""
    caps = result.get("capabilities") if isinstance(result, dict) else None
    chosen = caps.get("positionEncoding") if isinstance(caps, dict) else None
    return chosen if isinstance(chosen, str) and chosen else DEFAULT_ENCODING


def own_initialize_params(params: Any, encoding: str) -> dict[str, Any]:
    """The ``initialize`` params driveros gets: the client's, offering only the encoding the
    inner server chose (so that both count positions alike), with driveros' own section of
    the ``initializationOptions`` (the rest belongs to the inner server)."""
    out = dict(params) if isinstance(params, dict) else {}
    caps = dict(out.get("capabilities") or {})
    general = dict(caps.get("general") or {})
    general["positionEncodings"] = [encoding]
    caps["general"] = general
    out["capabilities"] = caps
    out["initializationOptions"] = own_section(out.get("initializationOptions"))
    return out


def own_section(options: Any) -> Any:
    """driveros' settings in ``options``: its ``driveros`` object, else None."""
    if isinstance(options, dict) and isinstance(options.get(SETTINGS_SECTION), dict):
        return options[SETTINGS_SECTION]
    return None


def own_configuration(params: Any) -> dict[str, Any] | None:
    """``workspace/didChangeConfiguration`` params for driveros, or None when it is not for
    driveros: its section when the client sent one; ``settings: null`` when the client sent
    none (driveros then asks with ``workspace/configuration``); None for other servers'
    settings (eglot sends ``{}`` on connect: the settings driveros got in ``initialize``
    stay)."""
    settings = params.get("settings") if isinstance(params, dict) else None
    if settings is None:
        return {"settings": None}
    section = own_section(settings)
    return None if section is None else {"settings": {SETTINGS_SECTION: section}}


def _kinds(provider: Any) -> list[str] | None:
    """A codeActionProvider's kinds; None when it serves every kind (``true``)."""
    if provider is True:
        return None
    if isinstance(provider, dict):
        kinds = provider.get("codeActionKinds")
        return [k for k in kinds if isinstance(k, str)] if isinstance(kinds, list) else None
    return []


def _union(first: list[str], second: list[str]) -> list[str]:
    return first + [x for x in second if x not in first]


def merge_capabilities(inner: Any, own: Any) -> dict[str, Any]:
    """The inner server's capabilities plus driveros' code actions and commands.

    Code action kinds and executeCommand commands are unions; everything else (document
    sync, the position encoding, every other provider) is the inner server's.
    """
    caps = dict(inner) if isinstance(inner, dict) else {}
    mine = own if isinstance(own, dict) else {}
    theirs_actions = caps.get("codeActionProvider")
    my_actions = mine.get("codeActionProvider")
    if my_actions:
        if not theirs_actions:
            caps["codeActionProvider"] = my_actions
        else:
            theirs_kinds, my_kinds = _kinds(theirs_actions), _kinds(my_actions)
            if theirs_kinds is not None:  # `true`: every kind already, nothing to add
                merged = dict(theirs_actions) if isinstance(theirs_actions, dict) else {}
                merged["codeActionKinds"] = _union(theirs_kinds, my_kinds or [])
                caps["codeActionProvider"] = merged
    theirs_commands = _commands(caps.get("executeCommandProvider"))
    my_commands = _commands(mine.get("executeCommandProvider"))
    if my_commands:
        provider = caps.get("executeCommandProvider")
        merged_provider = dict(provider) if isinstance(provider, dict) else {}
        merged_provider["commands"] = _union(theirs_commands, my_commands)
        caps["executeCommandProvider"] = merged_provider
    return caps


def _commands(provider: Any) -> list[str]:
    if isinstance(provider, dict) and isinstance(provider.get("commands"), list):
        return [c for c in provider["commands"] if isinstance(c, str)]
    return []


def merge_actions(inner: Any, own: Any) -> list[Any] | None:
    """Both servers' code actions, the inner server's first; None when neither has any."""
    first = inner if isinstance(inner, list) else []
    second = own if isinstance(own, list) else []
    if inner is None and not second:
        return None
    return first + second


def _pos(value: Any) -> tuple[int, int] | None:
    if not isinstance(value, dict):
        return None
    line, char = value.get("line"), value.get("character")
    if isinstance(line, int) and isinstance(char, int):
        return line, char
    return None


def _span(value: Any) -> tuple[tuple[int, int], tuple[int, int]] | None:
    if not isinstance(value, dict):
        return None
    start, end = _pos(value.get("start")), _pos(value.get("end"))
    if start is None or end is None:
        return None
    return start, end


def diagnostics_at(diagnostics: list[Any], at: Any) -> list[Any]:
    """The diagnostics whose range touches the range ``at`` (an empty range at the cursor
    touches the diagnostic it is in or next to), in their order."""
    wanted = _span(at)
    if wanted is None:
        return []
    out: list[Any] = []
    for diag in diagnostics:
        span = _span(diag.get("range")) if isinstance(diag, dict) else None
        if span is not None and span[0] <= wanted[1] and wanted[0] <= span[1]:
            out.append(diag)
    return out


def is_own_action(item: Any) -> bool:
    """A code action of driveros (its command is a ``driveros.`` one)."""
    if not isinstance(item, dict):
        return False
    command = item.get("command")
    name = command.get("command") if isinstance(command, dict) else command
    return isinstance(name, str) and name.startswith("driveros.")


def apply_changes(text: str, changes: list[Any], encoding: Encoding) -> str | None:
    """``text`` after a ``didChange``'s ``contentChanges``, each applied to the text the one
    before it left (a change without a range replaces the whole text); None when a change is
    not one (the caller then leaves the document to pygls). Lines end only where LSP ends
    them, and characters count in ``encoding``."""
    for change in changes:
        if not isinstance(change, dict) or not isinstance(change.get("text"), str):
            return None
        if "range" not in change:
            text = change["text"]
            continue
        span = _span(change["range"])
        if span is None:
            return None
        (sl, sc), (el, ec) = span
        text = apply_hunks(text, [Hunk(Pos(sl, sc), Pos(el, ec), change["text"])], encoding)
    return text
