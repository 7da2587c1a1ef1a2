"""The environment commands see: minimal by default, secrets scrubbed always.

The sandbox never reads ``os.environ`` itself. A caller that wants its own environment
passed through hands it in (``LocalSandbox(ws, base_env=os.environ)``); it is scrubbed of
provider keys and anything that looks like a secret before any command sees it.
"""

from __future__ import annotations

from collections.abc import Mapping

from driveros.config import KEY_VARS, is_secret_name
from driveros.sandbox._protocol import PolicyError

#: Used when the caller gives no base environment.
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

#: Name fragments treated as secrets on top of driveros.config's hints.
_EXTRA_SECRET_HINTS = ("PASS", "AUTH", "COOKIE", "SESSION", "PRIVATE", "CREDS", "DSN")
#: Exact names that carry credentials without saying so.
_SECRET_NAMES = frozenset(
    {"DATABASE_URL", "REDIS_URL", "MONGODB_URI", "SSH_AUTH_SOCK", "GPG_AGENT_INFO", "NETRC"}
)

#: Forced for every command: nothing may wait on a terminal or a pager.
NON_INTERACTIVE = {
    "TERM": "dumb",
    "PAGER": "cat",
    "GIT_PAGER": "cat",
    "GIT_TERMINAL_PROMPT": "0",
    "NO_COLOR": "1",
    "DEBIAN_FRONTEND": "noninteractive",
}


#: Forced for every command: Python writes no bytecode caches. An edit that keeps a file's size
#: within the same second as an earlier import would otherwise leave a ``.pyc`` that Python
#: still trusts (it checks whole-second mtime and size), and the agent's next test run would
#: exercise the old code. It also keeps ``__pycache__`` out of the copy the agent works on.
FRESH_CODE = {"PYTHONDONTWRITEBYTECODE": "1"}


def is_secret(name: str) -> bool:
    """Whether a variable is withheld from commands by default."""
    upper = name.upper()
    if upper in _SECRET_NAMES or name in {v for v in KEY_VARS.values() if v}:
        return True
    return is_secret_name(name) or any(hint in upper for hint in _EXTRA_SECRET_HINTS)


def scrub(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` without secrets (provider keys, tokens, passwords, agent sockets...)."""
    return {k: v for k, v in env.items() if not is_secret(k)}


def base_environment(base_env: Mapping[str, str] | None) -> dict[str, str]:
    """The environment every command starts from (HOME is added by the sandbox if absent).

    ``None`` gives a minimal safe one (PATH, LANG, TERM=dumb ...); a mapping is scrubbed
    and used. The non-interactive and fresh-code settings always win.
    """
    if base_env is None:
        env = {"PATH": DEFAULT_PATH, "LANG": "C.UTF-8", "LC_ALL": "C.UTF-8"}
    else:
        env = scrub(base_env)
        env.setdefault("PATH", DEFAULT_PATH)
        env.setdefault("LANG", "C.UTF-8")
    env.update(NON_INTERACTIVE)
    env.update(FRESH_CODE)
    return env


def command_environment(base: Mapping[str, str], extra: Mapping[str, str] | None) -> dict[str, str]:
    """``base`` plus the caller's per-command variables (given explicitly, so not scrubbed)."""
    env = dict(base)
    if extra:
        for key, value in extra.items():
            if not key or "=" in key or "\x00" in key or "\x00" in value:
                raise PolicyError(f"invalid environment variable name or value: {key!r}")
            env[key] = value
    return env


def check_command(command: str) -> None:
    """Refuse a command no shell could be given: NUL bytes, lone surrogates, not a str."""
    if not isinstance(command, str):
        raise PolicyError(f"a command must be a string, not {type(command).__name__}")
    if "\x00" in command:
        raise PolicyError("the command contains a NUL byte")
    try:
        command.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise PolicyError(f"the command is not valid Unicode text (position {exc.start})") from exc
