"""The config-pin policy: which git configuration keys run a program, and what a repository's
own setting of one is pinned back to before driveros runs git in it (docs/security.md,
"Allowlisted commands that read outside the workspace or run planted code").

Pure policy, no git run here: :mod:`driveros._git` reads a repository's configuration and
applies :func:`program_pins` to every call; the approval policy asks before git runs in a
repository that sets a key :func:`is_program_key` names; the sandbox gives every command the
:data:`NEUTRAL_VALUES`. A leaf: imports nothing of driveros.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import NamedTuple

#: Configuration keys that make git run a program (a shell command, a helper, a driver, a
#: hook directory) or point it at other code or files: git-config(1) and the pages it refers
#: to, as regular expressions over the lower-cased name (subsections are ``.+``); and Git
#: LFS's, whose filter (usually the user's) reads them from the repository's config too.
#: ``core.worktree`` and the ``include`` keys run nothing themselves but move git (and its
#: filters) to another tree or to configuration read from elsewhere.
_PROGRAM_KEY = re.compile(
    r"""(?x)^(?:
    core\.(?:fsmonitor|hookspath|pager|editor|askpass|sshcommand|gitproxy
            |alternaterefscommand|worktree)
  | sequence\.editor | interactive\.difffilter | web\.browser | init\.templatedir
  | diff\.(?:external|tool|guitool) | merge\.(?:tool|guitool)
  | log\.showsignature | gpg\.program | gpg\.ssh\.defaultkeycommand
  | uploadpack\.packobjectshook | protocol\.allow | credential\.helper | include\.path
  | (?:pager|alias)\..+
  | (?:difftool|mergetool|browser|man)\..+\.(?:cmd|path)
  | diff\..+\.(?:command|textconv) | merge\..+\.driver
  | filter\..+\.(?:clean|smudge|process)
  | gpg\..+\.program | credential\..+\.helper | includeif\..+\.path
  | remote\..+\.(?:uploadpack|receivepack|vcs)
  | protocol\..+\.allow | url\..+\.(?:insteadof|pushinsteadof)
  | submodule\..+\.update | tar\..+\.command | guitool\..+\.cmd | hook\..+\.command
  | trailer\..+\.(?:command|cmd)
  | sendemail\.(?:.+\.)?(?:sendmailcmd|tocmd|cccmd|smtpserver)
  | gc\.recentobjectshook | imap\.tunnel | help\.browser | man\.viewer | instaweb\..+
  | lfs\.customtransfer\..+\.path | lfs\.extension\..+\.(?:clean|smudge)
  | lfs\.standalonetransferagent
)$"""
)

#: Scopes a repository itself controls (an included file inherits its includer's scope).
REPOSITORY_SCOPES = frozenset({"local", "worktree"})


def is_program_key(key: str) -> bool:
    """Whether the configuration key ``key`` (any case) can make git run a program."""
    return _PROGRAM_KEY.match(key.lower()) is not None


class ConfigEntry(NamedTuple):
    """One line of ``git config --list --show-scope --show-origin``."""

    scope: str
    origin: str
    key: str
    #: None for a key written without ``=`` (a boolean true).
    value: str | None


def parse_config_list(data: bytes) -> list[ConfigEntry]:
    """The entries of ``git config --list -z --show-scope --show-origin`` output."""
    fields = data.decode("utf-8", "surrogateescape").split("\0")
    entries = []
    for i in range(0, len(fields) - 2, 3):
        key, newline, value = fields[i + 2].partition("\n")
        entries.append(ConfigEntry(fields[i], fields[i + 1], key, value if newline else None))
    return entries


#: What runs instead of a repository's external diff program. An empty value is no "unset"
#: (git would run a program named ""), so git says why it stops: ``--no-ext-diff`` shows it.
_REFUSED_DIFF = (
    "echo 'driveros: the external diff program set in this repository is not run;"
    " git diff --no-ext-diff shows the change' >&2; false"
)


#: The value that runs nothing (or git's default program) for each program key with a fixed
#: name whose value leaves git working as usual: what a repository's setting is pinned back
#: to, and what every sandbox command gets (``driveros.sandbox``'s ``GIT_PINS``).
NEUTRAL_VALUES: dict[str, str] = {
    "core.fsmonitor": "false",
    "core.pager": "cat",
    "core.editor": ":",
    "sequence.editor": ":",
    "core.askPass": "",
    "core.sshCommand": "ssh",
    "core.gitProxy": "none",
    "log.showSignature": "false",
    "gpg.program": "gpg",
    "gpg.openpgp.program": "gpg",
    "gpg.x509.program": "gpgsm",
    "gpg.ssh.program": "ssh-keygen",
    "credential.helper": "",
}
_FIXED = {key.lower(): value for key, value in NEUTRAL_VALUES.items()} | {
    "interactive.difffilter": "",
    "gpg.ssh.defaultkeycommand": "",
    "diff.external": _REFUSED_DIFF,
}


#: The value that runs nothing, for the program keys driveros' own commands can reach
#: (``add``, ``checkout-index``, ``diff``, ``log``, ``status``, ``commit``). Keys only
#: transports, tools or porcelain driveros never runs use (aliases, URLs, difftools) are left.
def _neutral(key: str) -> str | None:
    low = key.lower()
    if low in _FIXED:
        return _FIXED[low]
    section, _, rest = low.partition(".")
    variable = rest.rpartition(".")[2]
    if section == "pager":
        return "false"
    if (section, variable) == ("diff", "command"):
        return _REFUSED_DIFF
    if (section, variable) == ("diff", "textconv"):
        return "cat"  # the file as it is: what git shows without a textconv
    if (section, variable) in {
        ("filter", "clean"),
        ("filter", "smudge"),
        ("filter", "process"),
        ("credential", "helper"),
    }:
        return ""
    if section == "remote" and variable in ("uploadpack", "receivepack"):
        return f"git-{variable[:-4]}-{variable[-4:]}"
    return None


def program_pins(entries: Sequence[ConfigEntry]) -> list[tuple[str, str]]:
    """``(key, value)`` pins undoing every program key the repository's own config sets.

    A key is pinned to the last value the user's or the system's configuration gives it (a
    multi-valued helper list is reset and given those values again), else to the value that
    runs nothing. ``filter.<x>.required`` follows its filter (so a blanked filter is not an
    error). ``core.hooksPath`` is left to the caller (``run_git``'s ``hooks``).
    """
    pins: list[tuple[str, str]] = []
    planted = dict.fromkeys(
        e.key for e in entries if e.scope in REPOSITORY_SCOPES and is_program_key(e.key)
    )
    filters: dict[str, None] = {}
    for key in planted:
        neutral = _neutral(key)
        if neutral is None:
            continue
        others = [
            "true" if e.value is None else e.value
            for e in entries
            if e.key == key and e.scope not in REPOSITORY_SCOPES
        ]
        if key.lower().endswith(".helper"):
            pins.extend([(key, ""), *((key, v) for v in others)])
        else:
            pins.append((key, others[-1] if others else neutral))
        if key.lower().startswith("filter."):
            filters[key.rpartition(".")[0]] = None
    for name in filters:
        required = [
            "true" if e.value is None else e.value
            for e in entries
            if e.key.lower() == f"{name}.required".lower() and e.scope not in REPOSITORY_SCOPES
        ]
        pins.append((f"{name}.required", required[-1] if required else "false"))
    return pins
