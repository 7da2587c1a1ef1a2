"""Secret redaction for model input, events, log records, memory and the corpus.

Two kinds of secret are masked with ``[REDACTED]``:

- known values: the user's secret-looking environment variables, and the values of every
  ``.env*`` file of the workspace (read directly, so a key the real environment shadows is
  still known; see :func:`dotenv_secret_values`);
- token shapes, whoever they belong to: OpenAI/Anthropic ``sk-…``, GitHub ``ghp_…`` and
  ``github_pat_…``, AWS ``AKIA…``, Slack ``xox?-…``, Google ``AIza…``, Stripe, npm, JWTs, PEM
  private-key blocks, and the password of ``scheme://user:pass@host``.

What no redactor can catch is a secret that never appears whole: a command that prints it one
character per line, base64-encodes or reverses it. That is why secret files are not readable in
the first place (docs/sandbox.md, "Secret files"); docs/security.md says what remains.
"""

from __future__ import annotations

import base64
import logging
import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from pydantic import TypeAdapter

from driveros.agent._events import Event, event_adapter
from driveros.config import is_secret_name

MASK = "[REDACTED]"

#: Known values shorter than this are ignored (they would mask ordinary words).
MIN_SECRET_LEN = 6

_PEM_BEGIN = re.compile(r"-----BEGIN ([A-Z0-9 ]{0,60}PRIVATE KEY(?: BLOCK)?)-----")

#: Token shapes. None of them can match whitespace: the stream guard relies on that.
TOKEN_PATTERNS: tuple[re.Pattern[str], ...] = tuple(
    re.compile(p)
    for p in (
        # Distinctive prefixes match anywhere, even glued to other text.
        r"sk-ant-[A-Za-z0-9_-]{16,}",
        r"(?:sk|rk)_(?:live|test)_[A-Za-z0-9]{16,}",
        r"(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{20,}",
        r"github_pat_[A-Za-z0-9_]{20,}",
        r"glpat-[A-Za-z0-9_-]{20,}",
        r"(?:AKIA|ASIA|AGPA|AIDA|AROA|ANPA|ANVA|AIPA)[A-Z0-9]{16}",
        r"xox[abposr]-[A-Za-z0-9-]{10,}",
        r"AIza[0-9A-Za-z_-]{35}",
        r"npm_[A-Za-z0-9]{36}",
        r"eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]*",
        # The generic ``sk-`` only at a word start ("task-runner-…" is code, not a key).
        r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_-]{16,}",
    )
)
#: ``scheme://user:password@``: the user and password are masked, the scheme kept.
_URL_CREDENTIALS = re.compile(r"\b([A-Za-z][A-Za-z0-9+.-]{0,30}://)[^\s:/@]+:[^\s/@]+@")

#: The stream guard never holds back more than this: a longer run without whitespace is
#: released (redacted as far as it goes) rather than kept forever.
MAX_HELD = 256 * 1024

_WHITESPACE = re.compile(r"\s")


def _redact_pem(text: str) -> str:
    """Mask private-key blocks; one that never ends is masked to the end of ``text``."""
    out: list[str] = []
    pos = 0
    while (begin := _PEM_BEGIN.search(text, pos)) is not None:
        out.append(text[pos : begin.start()])
        end_marker = f"-----END {begin.group(1)}-----"
        end = text.find(end_marker, begin.end())
        out.append(MASK)
        if end < 0:
            return "".join(out)
        pos = end + len(end_marker)
    out.append(text[pos:])
    return "".join(out)


def _pem_prefix(tail: str) -> bool:
    """Whether ``tail`` could be the start of a private-key header still being streamed."""
    head = "-----BEGIN "
    if len(tail) <= len(head):
        return head.startswith(tail)
    if not tail.startswith(head):
        return False
    return re.fullmatch(r"[A-Z0-9 ]{0,70}-{0,4}", tail[len(head) :]) is not None


#: Values of ``.env`` assignments that are never worth masking (they would hide ordinary words).
_PLAIN_VALUE = re.compile(
    r"(?:[a-z_.-]+|[A-Za-z]+|[0-9.]+|/[\w./-]*|[\w.-]+:\d{1,5}|https?://[\w.:-]+/?)"
)


def dotenv_secret_values(pairs: Iterable[tuple[str, str]]) -> list[str]:
    """The values of ``.env`` assignments to mask: every value of a secret-looking name, and
    any other value of 8 characters or more that is not a plain word, number, path, host:port
    or credential-free URL (``DB_URL=postgres://admin:pw@…`` is masked whole)."""
    values: set[str] = set()
    for name, value in pairs:
        value = value.strip()
        if len(value) < MIN_SECRET_LEN:
            continue
        named = is_secret_name(name) or any(h in name.upper() for h in ("PASS", "AUTH", "DSN"))
        if named or (len(value) >= 8 and not _PLAIN_VALUE.fullmatch(value)):
            values.add(value)
    return sorted(values, key=len, reverse=True)


#: ``extraheader = …`` in a git configuration file (any section, any case).
_EXTRAHEADER = re.compile(r"^\s*extraheader\s*=\s*(.*?)\s*$", re.I | re.M)
#: What a git configuration file read for its headers may be at most.
_GIT_CONFIG_CAP = 1 << 20
_READ_FLAGS = os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC


def _read_regular(path: Path, cap: int) -> str | None:
    """At most ``cap`` bytes of ``path`` as text when it is a regular file (links followed, as
    git does); never a FIFO or a device a repository or a command planted, whose open or read
    would block the run's start. None otherwise."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):
            return None
        fd = os.open(path, _READ_FLAGS)
    except OSError:
        return None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):  # swapped since the look
            return None
        chunks: list[bytes] = []
        while cap > 0 and (chunk := os.read(fd, cap)):
            chunks.append(chunk)
            cap -= len(chunk)
    except OSError:
        return None
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", "replace")


def _git_config_files(root: Path) -> list[Path]:
    """The repository configuration files of ``root``: ``.git/config``, or for a worktree
    (``.git`` a file naming its git directory) that directory's and its common one's."""
    dot = root / ".git"
    if dot.is_dir():
        return [dot / "config"]
    line = (_read_regular(dot, 4096) or "").strip()
    if not line.startswith("gitdir:"):
        return []
    gitdir = (root / line.removeprefix("gitdir:").strip()).resolve()
    found = [gitdir / "config"]
    common = (_read_regular(gitdir / "commondir", 4096) or "").strip()
    if not common:
        return found
    return [*found, (gitdir / common).resolve() / "config"]


def git_header_secret_values(roots: Iterable[Path]) -> list[str]:
    """The credentials of ``http.*.extraheader`` entries in the repositories at ``roots``
    (``AUTHORIZATION: basic …`` / ``bearer …``): a repository's own configuration is readable
    by its commands, and a URL's password is masked by shape but a header's is not. The whole
    header value, its credential and, for ``basic``, the decoded password. Only regular files
    are read. Blocking."""
    values: set[str] = set()
    for root in roots:
        for path in _git_config_files(root):
            text = _read_regular(path, _GIT_CONFIG_CAP)
            if text is None:
                continue
            for raw in _EXTRAHEADER.findall(text):
                value = raw.strip().strip('"')
                values.add(value)
                words = value.split()
                if len(words) >= 2:
                    values.add(words[-1])
                    if words[-2].lower() == "basic":
                        values.update(_basic_password(words[-1]))
    return sorted((v for v in values if len(v) >= MIN_SECRET_LEN), key=len, reverse=True)


def _basic_password(encoded: str) -> list[str]:
    try:
        decoded = base64.b64decode(encoded, validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):
        return []
    _user, _, password = decoded.partition(":")
    return [decoded, password] if password else [decoded]


class Redactor:
    """Masks known secret values and token shapes with ``[REDACTED]``.

    ``secrets`` are exact values (under 6 characters are ignored); the longest is replaced
    first, so a secret that contains another is masked whole. ``patterns=False`` masks only the
    known values.
    """

    def __init__(self, secrets: Iterable[str] = (), *, patterns: bool = True) -> None:
        values = {s for s in secrets if len(s) >= MIN_SECRET_LEN}
        self._secrets = tuple(sorted(values, key=len, reverse=True))
        self._spaced = tuple(s for s in self._secrets if _WHITESPACE.search(s))
        self.patterns = patterns
        self._adapter: TypeAdapter[Event] | None = None

    def __bool__(self) -> bool:
        return bool(self._secrets) or self.patterns

    @property
    def secrets(self) -> tuple[str, ...]:
        """The known values, longest first."""
        return self._secrets

    def with_secrets(self, more: Iterable[str]) -> Redactor:
        """A redactor that also masks ``more``."""
        return Redactor([*self._secrets, *more], patterns=self.patterns)

    def stream(self) -> StreamGuard:
        """A guard for one stream of text fragments (a secret may be split across them)."""
        return StreamGuard(self)

    def text(self, value: str) -> str:
        for secret in self._secrets:
            if secret in value:
                value = value.replace(secret, MASK)
        if not self.patterns:
            return value
        if "-----BEGIN " in value:
            value = _redact_pem(value)
        for pattern in TOKEN_PATTERNS:
            value = pattern.sub(MASK, value)
        if "://" in value:
            value = _URL_CREDENTIALS.sub(rf"\1{MASK}@", value)
        return value

    def contains_secret(self, value: str) -> bool:
        """Whether :meth:`text` would change ``value``."""
        return self.text(value) != value

    def _walk(self, value: Any) -> Any:
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, dict):
            return {self._walk(k): self._walk(v) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return type(value)(self._walk(v) for v in value)
        return value

    def event(self, event: Event) -> Event:
        """The event itself when it holds no secret, otherwise a redacted copy."""
        if not self:
            return event
        raw = event.model_dump(mode="python")
        clean = self._walk(raw)
        if clean == raw:
            return event
        if self._adapter is None:
            self._adapter = event_adapter()
        return self._adapter.validate_python(clean)


class StreamGuard:
    """Redacts a text stream fragment by fragment, the same as redacting it whole.

    Text is released only up to a point no secret can straddle: after the last whitespace
    (token shapes contain none), before any partial known value that contains whitespace, and
    before an unfinished private-key block. The rest is held until the next fragment or
    :meth:`flush`.
    """

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._held = ""

    def _cut(self, text: str) -> int:
        red = self._redactor
        if not red.patterns and not red.secrets:
            return len(text)
        # Token shapes and values without whitespace cannot straddle a whitespace boundary.
        by_word = red.patterns or len(red._spaced) < len(red.secrets)
        cut = (
            max((m.end() for m in _WHITESPACE.finditer(text)), default=0) if by_word else len(text)
        )
        while True:
            before = cut
            for secret in red._spaced:  # a known value with whitespace may straddle the cut
                for start in range(max(0, cut - len(secret) + 1), cut):
                    if secret.startswith(text[start : start + len(secret)]):
                        cut = start
                        break
            if red.patterns:
                for begin in _PEM_BEGIN.finditer(text):
                    if begin.start() >= cut:
                        break
                    marker = f"-----END {begin.group(1)}-----"
                    end = text.find(marker, begin.end())
                    if end < 0 or end + len(marker) > cut:  # the block is not over by the cut
                        cut = begin.start()
                        break
                for start in range(max(0, len(text) - 90), cut):
                    if text[start] == "-" and _pem_prefix(text[start:]):
                        cut = start  # maybe the header of a key block still arriving
                        break
            if by_word and cut > 0 and not _WHITESPACE.match(text[cut - 1]):
                cut = max((m.end() for m in _WHITESPACE.finditer(text, 0, cut)), default=0)
            if cut == before:
                break
        if len(text) - cut > MAX_HELD:
            cut = len(text) - MAX_HELD // 2
        return cut

    def push(self, fragment: str) -> str:
        text = self._held + fragment
        cut = self._cut(text)
        self._held = text[cut:]
        return self._redactor.text(text[:cut])

    def flush(self) -> str:
        held, self._held = self._held, ""
        return self._redactor.text(held)


class RedactingFilter(logging.Filter):
    """A logging filter that redacts secrets from the rendered message of every record."""

    def __init__(self, redactor: Redactor) -> None:
        super().__init__()
        self._redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        if self._redactor:
            message = record.getMessage()
            clean = self._redactor.text(message)
            if clean != message:
                record.msg, record.args = clean, None
        return True
