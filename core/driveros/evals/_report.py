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

from pydantic import BaseModel, ConfigDict

from driveros.evals._results import CaseResult, EvalRun, summarize, wilson_interval

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2rem;color:#1b1f24;max-width:1100px}
h1{font-size:1.5rem}h2{font-size:1.15rem;margin-top:2rem}
table{border-collapse:collapse;width:100%;margin:.5rem 0}
th,td{border-bottom:1px solid #d0d7de;padding:.3rem .5rem;text-align:left;vertical-align:top}
th{background:#f6f8fa}.pass{color:#1a7f37;font-weight:600}.fail{color:#cf222e;font-weight:600}
.infra{color:#9a6700;font-weight:600}.num{text-align:right;font-variant-numeric:tabular-nums}
details{margin:.3rem 0}summary{cursor:pointer}pre{background:#f6f8fa;padding:.5rem;
overflow:auto;max-height:24rem;font-size:12px}.muted{color:#57606a}
.reg{background:#ffebe9}.fix{background:#dafbe1}
"""


def _esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _bar_chart(rows: Sequence[tuple[str, int, int]]) -> str:
    """Horizontal bars of pass rate with a 95% interval whisker, one row per label."""
    width, label_w, row_h = 640, 220, 26
    height = row_h * len(rows) + 24
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'role="img" aria-label="pass rates">'
    ]
    scale = width - label_w - 60
    for i, (label, passed, total) in enumerate(rows):
        y = i * row_h + 4
        rate = passed / total if total else 0.0
        low, high = wilson_interval(passed, total)
        parts.append(
            f'<text x="0" y="{y + 15}" font-size="12">{_esc(label)}</text>'
            f'<rect x="{label_w}" y="{y}" width="{scale}" height="18" fill="#eaeef2"/>'
            f'<rect x="{label_w}" y="{y}" width="{rate * scale:.1f}" height="18" fill="#2da44e"/>'
            f'<line x1="{label_w + low * scale:.1f}" x2="{label_w + high * scale:.1f}" '
            f'y1="{y + 9}" y2="{y + 9}" stroke="#1b1f24" stroke-width="1.5"/>'
            f'<text x="{label_w + scale + 6}" y="{y + 14}" font-size="12">'
            f"{rate:.0%} ({passed}/{total})</text>"
        )
    axis_y = row_h * len(rows) + 18
    for tick in (0, 0.5, 1.0):
        parts.append(
            f'<text x="{label_w + tick * scale - 8:.0f}" y="{axis_y}" font-size="10" '
            f'fill="#57606a">{tick:.0%}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)


def _status(case: CaseResult) -> str:
    if case.infra_error:
        return '<span class="infra">infra</span>'
    return '<span class="pass">pass</span>' if case.passed else '<span class="fail">fail</span>'


def _trace(case: CaseResult) -> str:
    if not case.events_file or not Path(case.events_file).is_file():
        return '<p class="muted">no trace recorded</p>'
    lines = []
    for raw in Path(case.events_file).read_text(encoding="utf-8").splitlines():
        try:
            ev = json.loads(raw)
        except ValueError:
            continue
        kind = ev.get("type", "?")
        body = {k: v for k, v in ev.items() if k not in ("type", "run_id", "seq", "ts")}
        lines.append(f"{kind:<14} {json.dumps(body)[:400]}")
    return f"<pre>{_esc(chr(10).join(lines))}</pre>"


def render_html(runs: Sequence[EvalRun], *, title: str = "driveros eval report") -> str:
    groups: dict[str, list[CaseResult]] = defaultdict(list)
    for run in runs:
        for case in run.cases:
            groups[
                f"{run.suite} · {case.provider or run.provider}/{case.model or run.model}"
            ].append(case)
    chart_rows = [(k, sum(c.passed for c in v), len(v)) for k, v in sorted(groups.items())]
    out = [
        "<!doctype html><html><head><meta charset='utf-8'>",
        f"<title>{_esc(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>{_esc(title)}</h1>",
        "<h2>Pass rate (bar) with 95% interval (line)</h2>",
        _bar_chart(chart_rows) if chart_rows else "<p>no cases</p>",
        "<h2>Summary</h2><table><tr><th>suite · provider/model</th><th>mode</th>"
        "<th class=num>cases</th><th class=num>passed</th><th class=num>infra</th>"
        "<th class=num>tokens</th><th class=num>cost</th><th class=num>turns</th>"
        "<th class=num>time</th></tr>",
    ]
    for run in runs:
        s = run.summary
        cost = f"${s.cost_usd:.4f}" if s.cost_usd is not None else "unknown" if s.total else "—"
        out.append(
            f"<tr><td>{_esc(run.suite)} · {_esc(run.provider)}/{_esc(run.model)}</td>"
            f"<td>{_esc(run.mode)}</td><td class=num>{s.total}</td>"
            f"<td class=num>{s.passed} ({s.pass_rate:.0%})</td><td class=num>{s.infra_errors}</td>"
            f"<td class=num>{s.tokens}</td><td class=num>{cost}</td><td class=num>{s.turns}</td>"
            f"<td class=num>{s.duration_ms / 1000:.1f} s</td></tr>"
        )
    out.append("</table><h2>Cases</h2>")
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
                f"<details><summary>{_status(case)} {_esc(run.suite)}/{_esc(case.case_id)} — "
                f"{_esc(case.outcome)}, {case.turns} turns, {case.usage.total_tokens} tokens, "
                f"{case.duration_ms / 1000:.1f} s</summary>{infra}<ul>{scores}</ul>"
                f"<p><b>Answer</b></p><pre>{_esc(case.answer)}</pre>{_trace(case)}</details>"
            )
    out.append("</body></html>")
    return "\n".join(out)


class CaseChange(BaseModel):
    model_config = ConfigDict(frozen=True)

    case_id: str
    before: bool | None
    after: bool | None


class Comparison(BaseModel):
    model_config = ConfigDict(frozen=True)

    suite: str
    before_rate: float
    after_rate: float
    delta: float
    #: Half-widths of both 95% intervals combined: deltas inside it are noise.
    noise_bound: float
    significant: bool
    regressions: tuple[CaseChange, ...]
    fixes: tuple[CaseChange, ...]
    unchanged: int


def compare_runs(before: EvalRun, after: EvalRun) -> Comparison:
    b = {c.case_id: c for c in before.cases}
    a = {c.case_id: c for c in after.cases}
    regressions, fixes, unchanged = [], [], 0
    for case_id in sorted(set(a) | set(b)):
        was = b[case_id].passed if case_id in b else None
        now = a[case_id].passed if case_id in a else None
        if was and not now:
            regressions.append(CaseChange(case_id=case_id, before=was, after=now))
        elif now and not was:
            fixes.append(CaseChange(case_id=case_id, before=was, after=now))
        else:
            unchanged += 1
    sb, sa = summarize(before.cases), summarize(after.cases)
    bound = ((sb.ci_high - sb.ci_low) / 2) + ((sa.ci_high - sa.ci_low) / 2)
    delta = sa.pass_rate - sb.pass_rate
    return Comparison(
        suite=after.suite,
        before_rate=sb.pass_rate,
        after_rate=sa.pass_rate,
        delta=delta,
        noise_bound=bound,
        significant=abs(delta) > bound,
        regressions=tuple(regressions),
        fixes=tuple(fixes),
        unchanged=unchanged,
    )


def render_comparison_text(cmp: Comparison) -> str:
    verdict = "beyond noise" if cmp.significant else "within noise"
    lines = [
        f"suite {cmp.suite}: pass rate {cmp.before_rate:.0%} -> {cmp.after_rate:.0%} "
        f"({cmp.delta:+.0%}, {verdict}: ±{cmp.noise_bound:.0%} from the 95% intervals)",
    ]
    for r in cmp.regressions:
        lines.append(f"  REGRESSION {r.case_id}: passed before, fails now")
    for f in cmp.fixes:
        lines.append(f"  fixed      {f.case_id}")
    lines.append(f"  unchanged  {cmp.unchanged}")
    return "\n".join(lines)
