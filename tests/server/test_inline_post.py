"""Post-processing of completions: examples and hypothesis properties."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from driveros_lsp.inline import clean, duplicate_overlap

CODE = st.text(alphabet="abc xyz()[]{}:;,'\"\n\t=+_", max_size=40)


@settings(max_examples=400, deadline=None)
@given(text=CODE, prefix=CODE, suffix=CODE)
def test_clean_never_duplicates_the_suffix(text: str, prefix: str, suffix: str) -> None:
    out = clean(text, prefix=prefix, suffix=suffix)
    assert duplicate_overlap(out, suffix) == 0


@settings(max_examples=400, deadline=None)
@given(text=CODE, prefix=CODE, suffix=CODE)
def test_clean_inserts_only_at_the_cursor_and_invents_nothing(
    text: str, prefix: str, suffix: str
) -> None:
    out = clean(text, prefix=prefix, suffix=suffix)
    document = prefix + out + suffix  # the item's range is empty at the cursor
    assert document.startswith(prefix) and document.endswith(suffix)
    # what it keeps is the model's own text; only closers for its own openers are added
    assert out.rstrip(")]}") in text.replace("\r\n", "\n")


@settings(max_examples=300, deadline=None)
@given(text=CODE, prefix=CODE, rest=st.text(alphabet="abc()=", min_size=1, max_size=10))
def test_clean_is_one_line_where_the_line_goes_on(text: str, prefix: str, rest: str) -> None:
    out = clean(text, prefix=prefix, suffix=rest + "\nmore\n")
    assert "\n" not in out


def test_clean_drops_the_closer_the_suffix_already_has() -> None:
    assert clean("print(x)", prefix="    ", suffix=")\n") == "print(x"


def test_clean_closes_what_it_opened_when_the_suffix_does_not() -> None:
    assert clean("print(len(x", prefix="    ", suffix="\n\nfoo()\n") == "print(len(x))"


def test_clean_does_not_close_when_the_suffix_starts_with_a_closer() -> None:
    assert clean("foo(a", prefix="x = [", suffix="]\n") == "foo(a"


def test_clean_keeps_the_lines_indentation_once() -> None:
    assert clean("    return a + b", prefix="def f(a, b):\n    ", suffix="\n") == "return a + b"


def test_clean_stops_before_retyping_the_next_line() -> None:
    suffix = "\nprint(add(1, 2))\n"
    text = "return a + b\n\nprint(add(1, 2))\nprint(add(3, 4))"
    assert clean(text, prefix="def add(a, b):\n    ", suffix=suffix) == "return a + b\n"


def test_clean_drops_the_rest_of_the_line_it_repeats() -> None:
    assert clean("foo(a, b) + 1", prefix="x = ", suffix=" + 1\n") == "foo(a, b)"


@settings(max_examples=300, deadline=None)
@given(
    text=st.text(alphabet="ab (\n\t\x00\x1b\x7f\u202e\u2066\u200b", max_size=30),
    suffix=CODE,
)
def test_clean_drops_characters_that_hide_what_code_does(text: str, suffix: str) -> None:
    out = clean(text, prefix="x = ", suffix=suffix)
    assert not set(out) & {"\x00", "\x1b", "\x7f", "\u202e", "\u2066"}


def test_clean_drops_a_bidi_override_from_the_model() -> None:
    assert clean("is_admin\u202e = True", prefix="", suffix="\n") == "is_admin = True"
