"""The warm-server check's pure parts: the CLI's message form, pyright's scope, JSONC."""

from __future__ import annotations

import json

import pytest

from driveros.intel._feed_server import _cli_message, _in_scope, _strip_comments


def test_feed_server_message_continuations_take_no_break_spaces() -> None:
    said = 'Argument of type "x"\n  "x" is not assignable\n    because'
    assert _cli_message(said) == (
        'Argument of type "x"\n\u00a0\u00a0"x" is not assignable\n\u00a0\u00a0\u00a0\u00a0because'
    )
    assert _cli_message("one line  with  spaces") == "one line  with  spaces"


def test_feed_server_scope_follows_plain_include_and_exclude_directories() -> None:
    assert _in_scope("app/a.py", (), ())
    assert _in_scope("src/a.py", ("src",), ())
    assert not _in_scope("tests/a.py", ("src",), ())
    assert not _in_scope("src/gen/a.py", ("src",), ("src/gen",))
    assert _in_scope("src/generated.py", ("src",), ("src/gen",))
    assert _in_scope("a.py", (".",), ())


def test_feed_server_pyrightconfig_comments_are_dropped_outside_strings() -> None:
    text = '{\n  // the sources\n  "include": ["src//x"], /* generated */ "exclude": ["gen"]\n}'
    assert json.loads(_strip_comments(text)) == {"include": ["src//x"], "exclude": ["gen"]}


def test_feed_server_hostile_pyrightconfig_is_refused_in_one_pass() -> None:
    """A repository's pyrightconfig.json of unterminated strings or comments (each start of
    one scanned to the end again made a megabyte take hours, on the event loop): refused at
    once, so the CLI check decides; a closed one is still read."""
    for piece in ('"\\', '"a/*', '/*"', "/*"):
        hostile = piece * ((1 << 20) // len(piece))
        with pytest.raises(ValueError, match="unterminated"):
            _strip_comments(hostile)
    with pytest.raises(ValueError, match="unterminated"):
        _strip_comments('{"include": ["src"]} /* open')
    assert json.loads(_strip_comments('{"a": "x\\"/*y"} // end')) == {"a": 'x"/*y'}
