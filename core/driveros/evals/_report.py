"""A self-contained HTML report of eval runs, and the comparison of two runs.

The HTML has no external assets: inline CSS, inline SVG bar charts (pass rate with its 95%
interval per suite/provider/model), a per-case table and a drill-down with each case's trace.
"""

from __future__ import annotations

import html
import json
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict

from driveros._errors import ConfigError
from driveros.evals._results import CaseResult, EvalRun, summarize, wilson_interval

_CSS = """
*{box-sizing:border-box}
body{font:14px/1.45 system-ui,sans-serif;margin:0 auto;padding:1.5rem;color:#1b1f24;
max-width:1100px;overflow-wrap:anywhere}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
.scroll{overflow-x:auto}.scroll table{min-width:46rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border-bottom:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top;
overflow-wrap:normal}
th{background:#f6f8fa}.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
.infra{color:#9a6700;font-weight:600}.num{text-align:right;font-variant-numeric:tabular-nums;
white-space:nowrap}
details{margin:.3rem 0}summary{cursor:pointer}
pre{background:#f6f8fa;padding:.5rem;margin:.25rem 0;max-height:24rem;overflow:auto;
font-size:12px;white-space:pre-wrap;overflow-wrap:anywhere}
.muted{color:#57606a}.reg{background:#ffebe9}.fix{background:#dafbe1}
.chart{display:grid;grid-template-columns:minmax(8rem,max-content) minmax(6rem,1fr) max-content;
gap:.35rem .75rem;align-items:center;margin:.5rem 0}
.chart .label{font-size:13px}
.bar{position:relative;height:18px;background:#eaeef2;border-radius:2px}
.bar .fill{position:absolute;left:0;top:0;bottom:0;background:#2da44e;border-radius:2px}
.bar .ci{position:absolute;top:8px;height:2px;background:#1b1f24}
.rate{font-size:13px;white-space:nowrap;font-variant-numeric:tabular-nums}
.trace{border-left:3px solid #d0d7de;padding-left:.6rem;margin:.5rem 0}
.ev{margin:.3rem 0;min-width:0;max-width:100%}
.ev .kind{font-size:11px;text-transform:uppercase;letter-spacing:.04em;color:#57606a}
.msg{white-space:pre-wrap;background:#fff8c5;padding:.35rem .5rem;border-radius:4px}
.think{white-space:pre-wrap;color:#57606a;font-style:italic}
.tool>summary code{font-weight:600}.tool.failed>summary{color:#cf222e}
"""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def run_label(suite: str, provider: str, model: str, mode: str = "") -> str:
    """``smoke · openai/gpt-x``; a run without a provider or model says so instead of ``/``."""
    who = "/".join(p for p in (provider, model) if p) or "no provider"
    return f"{suite} · {who}" + (f" ({mode})" if mode else "")


def _bar_chart(rows: Sequence[tuple[str, int, int]]) -> str:
    """Pass-rate bars with a 95% interval line, one row per label (an HTML grid: the labels
    and rates take the room they need at any page width, nothing is clipped)."""
    parts = ['<div class="chart" role="img" aria-label="pass rates">']
    for label, passed, total in rows:
        rate = passed / total if total else 0.0
        low, high = wilson_interval(passed, total)
        parts.append(
            f'<div class="label">{_esc(label)}</div>'
            f'<div class="bar"><div class="fill" style="width:{rate * 100:.1f}%"></div>'
            f'<div class="ci" style="left:{low * 100:.1f}%;width:{(high - low) * 100:.1f}%">'
            f"</div></div>"
            f'<div class="rate">{rate:.0%} ({passed}/{total})</div>'
        )
    parts.append("</div>")
    return "".join(parts)


def _status(case: CaseResult) -> str:
    if case.infra_error:
        return '<span class="infra">infra</span>'
    return '<span class="pass">pass</span>' if case.passed else '<span class="fail">fail</span>'


def _read_events(path: str | None) -> list[dict[str, Any]] | None:
    if not path or not Path(path).is_file():
        return None
    events = []
    for raw in Path(path).read_text(encoding="utf-8", errors="replace").splitlines():
        try:
            event = json.loads(raw)
        except ValueError:
            continue
        if isinstance(event, dict):
            events.append(event)
    return events


def trace_blocks(events: Sequence[dict[str, Any]]) -> list[tuple[str, dict[str, Any]]]:
    """The events as readable blocks: streamed ``text``/``thinking`` deltas of one turn merged
    into one message, each ``tool_call`` paired with its ``tool_result``, the rest as is."""
    blocks: list[tuple[str, dict[str, Any]]] = []
    calls: dict[str, dict[str, Any]] = {}
    for event in events:
        kind = str(event.get("type", "?"))
        if kind in ("text", "thinking"):
            last = blocks[-1] if blocks else None
            if last and last[0] == kind and last[1].get("turn") == event.get("turn"):
                last[1]["text"] += str(event.get("text", ""))
            else:
                blocks.append(
                    (kind, {"turn": event.get("turn"), "text": str(event.get("text", ""))})
                )
            continue
        if kind == "tool_call":
            block = {"call": event, "result": None, "approval": None}
            calls[str(event.get("call_id"))] = block
            blocks.append(("tool", block))
            continue
        pending = calls.get(str(event.get("call_id")))
        if kind == "tool_result" and pending is not None and pending["result"] is None:
            pending["result"] = event
            continue
        if kind == "approval" and pending is not None and pending["approval"] is None:
            pending["approval"] = event
            continue
        blocks.append((kind, event))
    return blocks


_SKIP = ("type", "run_id", "seq", "ts")


def _tool_block(block: dict[str, Any]) -> str:
    call, result, approval = block["call"], block["result"], block["approval"]
    name = str(call.get("name", "?"))
    arguments = call.get("arguments")
    command = arguments.get("command") if isinstance(arguments, dict) and name == "run" else None
    shown = command if isinstance(command, str) else json.dumps(arguments, ensure_ascii=False)
    if len(shown) > 120:
        shown = shown[:119] + "…"
    state = "no result"
    failed = False
    if result is not None:
        failed = not result.get("ok", False)
        state = ("✗ " if failed else "✓ ") + f"{float(result.get('duration_ms') or 0):.0f} ms"
    body = ["<pre>" + _esc(json.dumps(arguments, ensure_ascii=False, indent=2)) + "</pre>"]
    if approval is not None:
        body.append(
            f'<div class="muted">approval: {_esc(approval.get("decision"))} — '
            f"{_esc(approval.get('reason', ''))}</div>"
        )
    if result is not None:
        body.append("<pre>" + _esc(result.get("output", "")) + "</pre>")
    css = "tool failed" if failed else "tool"
    return (
        f'<details class="ev {css}"><summary><code>{_esc(name)}</code> {_esc(shown)} '
        f'<span class="muted">{_esc(state)}</span></summary>{"".join(body)}</details>'
    )


def _trace(case: CaseResult) -> str:
    events = _read_events(case.events_file)
    if events is None:
        return '<p class="muted">no trace recorded</p>'
    rows = []
    for kind, data in trace_blocks(events):
        if kind == "text":
            rows.append(f'<div class="ev"><div class="msg">{_esc(data["text"])}</div></div>')
        elif kind == "thinking":
            rows.append(f'<div class="ev"><div class="think">{_esc(data["text"])}</div></div>')
        elif kind == "tool":
            rows.append(_tool_block(data))
        elif kind == "turn_started":
            rows.append(
                f'<div class="ev"><span class="kind">turn {_esc(data.get("turn"))}</span></div>'
            )
        elif kind == "run_started":
            where = "/".join(str(data.get(k) or "") for k in ("provider", "model")).strip("/")
            rows.append(
                f'<div class="ev"><span class="kind">task</span> {_esc(data.get("task", ""))} '
                f'<span class="muted">({_esc(where or "no provider")}, '
                f"{_esc(data.get('sandbox') or 'no sandbox')})</span></div>"
            )
        elif kind == "result":
            verified = "verified" if data.get("verified") else "not verified"
            error = f" — {data.get('error')}" if data.get("error") else ""
            rows.append(
                f'<div class="ev"><span class="kind">result</span> '
                f"{_esc(data.get('outcome'))} (exit {_esc(data.get('exit_code'))}, {verified}, "
                f"{_esc(data.get('turns'))} turns){_esc(error)}</div>"
            )
        elif kind == "turn_finished":
            continue
        else:
            body = {k: v for k, v in data.items() if k not in _SKIP}
            text = json.dumps(body, ensure_ascii=False)
            if len(text) > 600:
                text = text[:599] + "…"
            rows.append(
                f'<div class="ev"><span class="kind">{_esc(kind)}</span> '
                f'<span class="muted">{_esc(text)}</span></div>'
            )
    return f'<div class="trace">{"".join(rows)}</div>'


def render_html(runs: Sequence[EvalRun], *, title: str = "driveros eval report") -> str:
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for run in runs:
        for case in run.cases:
            label = run_label(run.suite, case.provider or run.provider, case.model or run.model)
            groups[label].append(case)
    chart_rows = [(k, sum(c.passed for c in v), len(v)) for k, v in sorted(groups.items())]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        "<meta name='viewport' content='width=device-width, initial-scale=1'>",
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        "<h2>Pass rate (bar) with 95% interval (line)</h2>",
        _bar_chart(chart_rows) if chart_rows else "<p>no cases</p>",
        "<h2>Summary</h2><div class=scroll><table><tr><th>suite · provider/model</th>"
        "<th>mode</th><th class=num>cases</th><th class=num>passed</th><th class=num>infra</th>"
        "<th class=num>tokens</th><th class=num>cost</th><th class=num>turns</th>"
        "<th class=num>time</th></tr>",
    ]
    for run in runs:
        s = run.summary
        cost = f"${s.cost_usd:.4f}" if s.cost_usd is not None else "unknown" if s.total else "—"
        out.append(
            f"<tr><td>{_esc(run_label(run.suite, run.provider, run.model))}</td>"
            f"<td>{_esc(run.mode)}</td><td class=num>{s.total}</td>"
            f"<td class=num>{s.passed} ({s.pass_rate:.0%})</td><td class=num>{s.infra_errors}</td>"
            f"<td class=num>{s.tokens}</td><td class=num>{cost}</td><td class=num>{s.turns}</td>"
            f"<td class=num>{s.duration_ms / 1000:.1f} s</td></tr>"
        )
    out.append("</table></div><h2>Cases</h2>")
    for run in runs:
        for case in run.cases:
            scores = "".join(
                f"<li>{_esc(sc.scorer)}: "
                f"{'pass' if sc.passed else 'n/a' if sc.passed is None else 'fail'}"
                f" <span class=muted>{_esc(sc.detail)}</span></li>"
                for sc in case.scores
            )
            infra = f"<p class=infra>{_esc(case.infra_error)}</p>" if case.infra_error else ""
            out.append(
                f"<details class=case><summary>{_status(case)} {_esc(run.suite)}/"
                f"{_esc(case.case_id)} — {_esc(case.outcome)}, {case.turns} turns, "
                f"{case.usage.total_tokens} tokens, {case.duration_ms / 1000:.1f} s</summary>"
                f"{infra}<ul>{scores}</ul>"
                f"<p><b>Answer</b></p><pre>{_esc(case.answer)}</pre>{_trace(case)}</details>"
            )
    out.append("</body></html>")
    return "\n".join(out)


class DifferentSuitesError(ConfigError):
    """``eval compare`` was given the results of two different suites."""


class CaseChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    case_id: str
    before: bool | None
    after: bool | None


class Comparison(BaseModel):
    model_config = ConfigDict(frozen=True)

    #: The suite's name, or ``before -> after`` when two suites were compared on request.
    suite: str
    #: Pass rates over the compared cases (those both runs have).
    before_rate: float
    after_rate: float
    delta: float
    #: Half-widths of both 95% intervals combined: deltas inside it are noise.
    noise_bound: float
    significant: bool
    regressions: tuple[CaseChange, ...]
    fixes: tuple[CaseChange, ...]
    unchanged: int
    #: Cases both runs have: only these are compared.
    compared: int = 0
    #: Cases run only before, or only after: listed, never a regression or a fix.
    only_before: tuple[str, ...] = ()
    only_after: tuple[str, ...] = ()


def compare_runs(before: EvalRun, after: EvalRun, *, allow_different: bool = False) -> Comparison:
    """Compare the cases both runs have; list the ones only one of them ran.

    Two runs of different suites are refused (``DifferentSuitesError``) unless
    ``allow_different``: their cases share ids by accident, not by meaning."""
    if before.suite != after.suite and not allow_different:
        raise DifferentSuitesError(
            f"the results are of two different suites ({before.suite!r} and {after.suite!r}); "
            "pass --allow-different-suites to compare them case by case anyway",
            before=before.suite,
            after=after.suite,
        )
    b = {c.case_id: c for c in before.cases}
    a = {c.case_id: c for c in after.cases}
    common = sorted(set(a) & set(b))
    regressions, fixes, unchanged = [], [], 0
    for case_id in common:
        was, now = b[case_id].passed, a[case_id].passed
        if was and not now:
            regressions.append(CaseChange(case_id=case_id, before=was, after=now))
        elif now and not was:
            fixes.append(CaseChange(case_id=case_id, before=was, after=now))
        else:
            unchanged += 1
    sb = summarize(tuple(b[c] for c in common))
    sa = summarize(tuple(a[c] for c in common))
    bound = ((sb.ci_high - sb.ci_low) / 2) + ((sa.ci_high - sa.ci_low) / 2)
    delta = sa.pass_rate - sb.pass_rate
    suite = after.suite if before.suite == after.suite else f"{before.suite} -> {after.suite}"
    return Comparison(
        suite=suite,
        before_rate=sb.pass_rate,
        after_rate=sa.pass_rate,
        delta=delta,
        noise_bound=bound,
        significant=abs(delta) > bound,
        regressions=tuple(regressions),
        fixes=tuple(fixes),
        unchanged=unchanged,
        compared=len(common),
        only_before=tuple(sorted(set(b) - set(a))),
        only_after=tuple(sorted(set(a) - set(b))),
    )


def render_comparison_text(cmp: Comparison) -> str:
    verdict = "beyond noise" if cmp.significant else "within noise"
    lines = [
        f"suite {cmp.suite}: pass rate {cmp.before_rate:.0%} -> {cmp.after_rate:.0%} "
        f"({cmp.delta:+.0%}, {verdict}: ±{cmp.noise_bound:.0%} from the 95% intervals) "
        f"over the {cmp.compared} cases both runs have",
    ]
    for r in cmp.regressions:
        lines.append(f"  REGRESSION {r.case_id}: passed before, fails now")
    for f in cmp.fixes:
        lines.append(f"  fixed      {f.case_id}")
    lines.append(f"  unchanged  {cmp.unchanged}")
    lines.extend(f"  only before  {case_id} (not compared)" for case_id in cmp.only_before)
    lines.extend(f"  only after   {case_id} (not compared)" for case_id in cmp.only_after)
    return "\n".join(lines)
