"""The HTML report of a real replayed suite run, rendered in headless Chromium: merged
messages, tool calls as collapsible blocks, nothing clipped at any realistic width."""

from __future__ import annotations

import json
import os
import re
import shutil
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from driveros.evals._report import run_label, trace_blocks

DRIVEROS = Path(sys.executable).parent / "driveros"

#: Opens every <details>, then measures; the verdict lands in the DOM for --dump-dom.
_PROBE = """
<script>
window.addEventListener('load', () => {
  document.querySelectorAll('details').forEach(d => d.open = true);
  const page = document.documentElement.clientWidth;
  const over = [];
  for (const el of document.querySelectorAll('.ev, .chart > *, .rate, td, th, h1, pre, .msg')) {
    const r = el.getBoundingClientRect();
    if (el.scrollWidth > el.clientWidth + 1 && getComputedStyle(el).overflowX !== 'auto')
      over.push(el.className + ': ' + el.textContent.slice(0, 40));
    if (r.right > page + 1 && !el.closest('.scroll')) over.push('past the page: ' + el.className);
  }
  const rates = [...document.querySelectorAll('.rate')].map(e => ({
    text: e.textContent, whole: e.scrollWidth <= e.clientWidth,
    inside: e.getBoundingClientRect().right <= page }));
  const verdict = {
    page, over, rates,
    messages: [...document.querySelectorAll('.msg')].map(e => e.textContent),
    tools: [...document.querySelectorAll('details.tool > summary')].map(e => e.textContent),
    docScroll: document.documentElement.scrollWidth,
  };
  const out = document.createElement('pre');
  out.id = 'verdict';
  out.textContent = JSON.stringify(verdict);
  document.body.appendChild(out);
});
</script>
"""


def _chromium() -> str:
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found is None:
        if os.environ.get("DRIVEROS_CI") == "1":
            pytest.fail("chromium is missing (.ci/run installs it)")
        pytest.skip("chromium is not installed (apt-get install -y chromium)")
    return found


def _browser(*args: str, profile: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            _chromium(),
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--hide-scrollbars",
            f"--user-data-dir={profile}",
            "--virtual-time-budget=5000",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


@pytest.fixture(scope="module")
def report(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """``driveros eval run smoke --replay``: a real suite run from its cassettes."""
    out = tmp_path_factory.mktemp("eval") / "out"
    env = {
        "PATH": f"{DRIVEROS.parent}:/usr/bin:/bin",
        "HOME": os.environ.get("HOME", "/tmp"),
        "LANG": "C.UTF-8",
        "DRIVEROS_STATE_DIR": os.environ.get("DRIVEROS_STATE_DIR", ""),
    }
    run = subprocess.run(
        [str(DRIVEROS), "eval", "run", "smoke", "--replay", "--out", str(out)],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert run.returncode == 0, run.stderr
    return out / "report.html"


def _verdict(report: Path, width: int, tmp_path: Path) -> dict[str, object]:
    probed = tmp_path / f"probe-{width}.html"
    probed.write_text(report.read_text().replace("</body>", _PROBE + "</body>"))
    done = _browser(
        f"--window-size={width},900", "--dump-dom", probed.as_uri(), profile=tmp_path / "p"
    )
    match = re.search(r'<pre id="verdict">(.*?)</pre>', done.stdout, re.S)
    assert match, done.stderr[-2000:]
    text = match.group(1).replace("&quot;", '"').replace("&lt;", "<").replace("&gt;", ">")
    return dict(json.loads(text.replace("&amp;", "&")))


@pytest.mark.parametrize("width", [1280, 800, 390])
def test_report_fits_the_page_and_the_pass_rate_is_whole(
    report: Path, tmp_path: Path, width: int
) -> None:
    verdict = _verdict(report, width, tmp_path)
    assert verdict["rates"] == [{"text": "100% (3/3)", "whole": True, "inside": True}]
    assert verdict["over"] == [], verdict["over"]
    assert verdict["docScroll"] == verdict["page"]
    # streamed deltas are one message each, never "The pro" / "ject de" rows
    messages = verdict["messages"]
    assert isinstance(messages, list)
    assert "Running it prints `Hello, world!`." in messages
    tools = verdict["tools"]
    assert isinstance(tools, list)
    assert any(t.startswith("run python3 app.py") for t in tools), tools


def test_report_screenshot_at_1280(report: Path, tmp_path: Path) -> None:
    shot = tmp_path / "report.png"
    done = _browser(
        "--window-size=1280,900", f"--screenshot={shot}", report.as_uri(), profile=tmp_path / "p"
    )
    assert shot.is_file(), done.stderr[-2000:]
    data = shot.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    assert (width, height) == (1280, 900)
    assert len(data) > 10_000  # a rendered page, not a blank one


def test_trace_blocks_merge_deltas_and_pair_calls_with_results() -> None:
    events = [
        {"type": "turn_started", "turn": 1},
        {"type": "text", "turn": 1, "text": "The pro"},
        {"type": "text", "turn": 1, "text": "ject de"},
        {"type": "text", "turn": 1, "text": "clares x."},
        {"type": "tool_call", "turn": 1, "call_id": "a", "name": "run", "arguments": {}},
        {"type": "approval", "turn": 1, "call_id": "a", "decision": "allowed"},
        {"type": "tool_result", "turn": 1, "call_id": "a", "ok": True, "output": "hi"},
        {"type": "text", "turn": 2, "text": "Done"},
    ]
    blocks = trace_blocks(events)
    assert [kind for kind, _ in blocks] == ["turn_started", "text", "tool", "text"]
    assert blocks[1][1]["text"] == "The project declares x."
    assert blocks[2][1]["result"]["output"] == "hi"
    assert blocks[2][1]["approval"]["decision"] == "allowed"


def test_a_run_without_provider_is_labelled_so() -> None:
    assert run_label("smoke", "", "") == "smoke · no provider"
    assert run_label("smoke", "openai", "") == "smoke · openai"
    assert run_label("smoke", "openai", "gpt-x", "live") == "smoke · openai/gpt-x (live)"
