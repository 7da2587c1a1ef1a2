"""Reading a command's options the way its own parser does (getopt_long, argparse, Go flags).

The allowlist must see what the program sees: ``-e.`` is ``-e`` with the value ``.``,
``-rne.`` is ``-r -n -e .``, ``--regexp=.`` and ``--reg .`` are ``--regexp``, and GNU tools
keep reading options after operands. A classifier that guesses differently lets a file
through as a "pattern"; so options unknown to a table are refused rather than guessed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field


class Unsafe(Exception):
    """Raised inside the classifier; its message becomes the block reason."""


@dataclass(frozen=True)
class OptionTable:
    """One program's options. ``short_arg``/``long_arg`` take a value (attached or the next
    word); ``long_optional`` takes one only as ``--name=value``; ``digits`` accepts ``-NUM``.
    Long options may be abbreviated to any unique prefix (as getopt_long and argparse do)."""

    short_arg: str = ""
    short_flag: str = ""
    long_arg: frozenset[str] = field(default_factory=frozenset)
    long_flag: frozenset[str] = field(default_factory=frozenset)
    long_optional: frozenset[str] = field(default_factory=frozenset)
    digits: bool = False

    @property
    def longs(self) -> frozenset[str]:
        return self.long_arg | self.long_flag | self.long_optional


@dataclass(frozen=True)
class Parsed:
    """Options in order as ``("-e", ".")``/``("--file", "x")``/``("-r", None)``; operands."""

    options: list[tuple[str, str | None]]
    operands: list[str]


def resolve_long(name: str, table: OptionTable, cmd: str) -> str:
    """The full long option ``name`` stands for (exact, or the one option it abbreviates)."""
    if name in table.longs:
        return name
    matches = sorted(o for o in table.longs if o.startswith(name)) if name else []
    if len(matches) == 1:
        return matches[0]
    if matches:
        raise Unsafe(f"`{cmd} --{name}` is ambiguous ({', '.join('--' + m for m in matches)})")
    raise Unsafe(f"`{cmd} --{name}` is not an option the allowlist knows")


def parse_options(args: Sequence[str], table: OptionTable, cmd: str) -> Parsed:
    """Parse ``args`` with GNU getopt_long rules (options may follow operands; ``--`` ends
    them). Unknown options raise :class:`Unsafe`."""
    options: list[tuple[str, str | None]] = []
    operands: list[str] = []
    i = 0
    while i < len(args):
        a = args[i]
        if a == "--":
            operands.extend(args[i + 1 :])
            break
        if a.startswith("--"):
            name, eq, value = a[2:].partition("=")
            full = resolve_long(name, table, cmd)
            if full in table.long_arg:
                if not eq:
                    if i + 1 >= len(args):
                        raise Unsafe(f"`{cmd} --{full}` needs a value")
                    i += 1
                    value = args[i]
                options.append(("--" + full, value))
            elif full in table.long_optional:
                options.append(("--" + full, value if eq else None))
            else:
                if eq:
                    raise Unsafe(f"`{cmd} --{full}` takes no value")
                options.append(("--" + full, None))
        elif a.startswith("-") and a != "-":
            j = 1
            while j < len(a):
                c = a[j]
                if table.digits and c.isdigit():
                    k = j
                    while k < len(a) and a[k].isdigit():
                        k += 1
                    options.append(("-NUM", a[j:k]))
                    j = k
                elif c in table.short_arg:
                    value = a[j + 1 :]
                    if not value:
                        if i + 1 >= len(args):
                            raise Unsafe(f"`{cmd} -{c}` needs a value")
                        i += 1
                        value = args[i]
                    options.append(("-" + c, value))
                    break
                elif c in table.short_flag:
                    options.append(("-" + c, None))
                    j += 1
                else:
                    raise Unsafe(f"`{cmd} -{c}` is not an option the allowlist knows")
        else:
            operands.append(a)
        i += 1
    return Parsed(options, operands)


def is_long_prefix(arg: str, option: str) -> bool:
    """Whether ``arg`` (``--name`` or ``--name=value``) names ``option`` (``--full-name``)
    or any abbreviation of it, as argparse and getopt_long accept."""
    if not (arg.startswith("--") and option.startswith("--")):
        return False
    name = arg[2:].partition("=")[0]
    return bool(name) and option[2:].startswith(name)


GREP = OptionTable(
    short_arg="ABCDdefm",
    short_flag="abcEFGHhIiLlnoPqRrsTUVvwxyZz",
    long_arg=frozenset(
        {
            "after-context",
            "before-context",
            "context",
            "devices",
            "directories",
            "exclude",
            "exclude-dir",
            "exclude-from",
            "file",
            "group-separator",
            "include",
            "label",
            "max-count",
            "regexp",
            "binary-files",
        }
    ),
    long_flag=frozenset(
        {
            "basic-regexp",
            "binary",
            "byte-offset",
            "count",
            "dereference-recursive",
            "extended-regexp",
            "files-with-matches",
            "files-without-match",
            "fixed-strings",
            "help",
            "ignore-case",
            "initial-tab",
            "invert-match",
            "line-buffered",
            "line-number",
            "line-regexp",
            "no-filename",
            "no-group-separator",
            "no-ignore-case",
            "no-messages",
            "null",
            "null-data",
            "only-matching",
            "perl-regexp",
            "quiet",
            "recursive",
            "silent",
            "text",
            "version",
            "with-filename",
            "word-regexp",
        }
    ),
    long_optional=frozenset({"color", "colour"}),
    digits=True,
)

RG = OptionTable(
    short_arg="ABCEMTefgjmrt",
    short_flag="abcFHhIiLlNnoPpqSsUuVvwxz0.",
    long_arg=frozenset(
        {
            "after-context",
            "before-context",
            "color",
            "colors",
            "context",
            "context-separator",
            "dfa-size-limit",
            "encoding",
            "engine",
            "field-context-separator",
            "field-match-separator",
            "file",
            "glob",
            "hyperlink-format",
            "iglob",
            "ignore-file",
            "max-columns",
            "max-count",
            "max-depth",
            "max-filesize",
            "path-separator",
            "pre",
            "pre-glob",
            "regex-size-limit",
            "regexp",
            "replace",
            "sort",
            "sortr",
            "threads",
            "type",
            "type-add",
            "type-clear",
            "type-not",
        }
    ),
    long_flag=frozenset(
        {
            "auto-hybrid-regex",
            "binary",
            "block-buffered",
            "byte-offset",
            "case-sensitive",
            "column",
            "count",
            "count-matches",
            "crlf",
            "debug",
            "files",
            "files-with-matches",
            "files-without-match",
            "fixed-strings",
            "follow",
            "glob-case-insensitive",
            "heading",
            "help",
            "hidden",
            "ignore-case",
            "ignore-file-case-insensitive",
            "include-zero",
            "invert-match",
            "json",
            "line-buffered",
            "line-number",
            "line-regexp",
            "max-columns-preview",
            "mmap",
            "multiline",
            "multiline-dotall",
            "no-config",
            "no-filename",
            "no-heading",
            "no-hidden",
            "no-ignore",
            "no-ignore-dot",
            "no-ignore-exclude",
            "no-ignore-files",
            "no-ignore-global",
            "no-ignore-messages",
            "no-ignore-parent",
            "no-ignore-vcs",
            "no-line-number",
            "no-messages",
            "no-mmap",
            "no-pcre2-unicode",
            "no-require-git",
            "no-unicode",
            "null",
            "null-data",
            "one-file-system",
            "only-matching",
            "passthru",
            "pcre2",
            "pcre2-version",
            "pretty",
            "quiet",
            "search-zip",
            "smart-case",
            "stats",
            "text",
            "trim",
            "type-list",
            "unrestricted",
            "version",
            "vimgrep",
            "with-filename",
            "word-regexp",
        }
    ),
)
