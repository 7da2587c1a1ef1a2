"""Redaction of secrets from events, text and log records."""

from __future__ import annotations

import logging

import pytest

from driveros.agent import RedactingFilter, Redactor, Text, ToolCall
from driveros.config import load_environment

SECRET = "sk-proj-1234567890abcdef"


def test_redactor_masks_every_secret_from_the_environment() -> None:
    env = load_environment(
        environ={"OPENAI_API_KEY": SECRET, "GITHUB_TOKEN": "ghp_tokenvalue99", "EDITOR": "vim"}
    )
    redactor = Redactor(env.secret_values())
    assert redactor.text(f"a {SECRET} b ghp_tokenvalue99 vim") == "a [REDACTED] b [REDACTED] vim"


def test_redactor_masks_secrets_inside_event_fields_and_keeps_clean_events() -> None:
    redactor = Redactor([SECRET, "short"])
    call = ToolCall(
        run_id="r", turn=1, call_id="c", name="run", arguments={"command": f"curl -H {SECRET}"}
    )
    clean = redactor.event(call)
    assert clean.arguments == {"command": "curl -H [REDACTED]"}
    untouched = Text(run_id="r", turn=1, text="nothing to hide, short")
    assert redactor.event(untouched) is untouched  # values under 6 characters are ignored


def test_redacting_filter_cleans_log_records(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("driveros.test.redact")
    redacting = RedactingFilter(Redactor([SECRET]))
    logger.addFilter(redacting)
    try:
        with caplog.at_level(logging.INFO, logger="driveros.test.redact"):
            logger.info("calling with key=%s", SECRET)
    finally:
        logger.removeFilter(redacting)
    assert caplog.messages == ["calling with key=[REDACTED]"]
    assert SECRET not in caplog.text


def test_stream_guard_catches_a_secret_split_across_fragments() -> None:
    guard = Redactor([SECRET]).stream()
    fragments = ["the key is sk-pr", "oj-12345", "67890abcdef and", " more sk-", "done"]
    emitted = [guard.push(f) for f in fragments] + [guard.flush()]
    joined = "".join(emitted)
    assert joined == "the key is [REDACTED] and more sk-done"
    assert all(SECRET not in e for e in emitted)
    assert emitted[0] == "the key is "  # only the possible beginning of a secret is held back


def test_stream_guard_passes_text_through_without_secrets() -> None:
    guard = Redactor([]).stream()
    assert "".join([guard.push("sk-"), guard.push("abc "), guard.flush()]) == "sk-abc "


def test_redactor_masks_secrets_that_need_json_escaping() -> None:
    odd = 'pa"ss\\wörd-42'
    redactor = Redactor([odd])
    event = redactor.event(Text(run_id="r", turn=1, text=f"x {odd} y"))
    assert event.text == "x [REDACTED] y"
