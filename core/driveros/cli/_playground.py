"""``driveros playground``: one prompt to every configured provider, side by side.

stdout gets the table (provider, model, answer, tokens, latency); stderr gets diagnostics.
Exit 0 when at least one provider answered, 5 when every provider failed, 1 when no
provider is configured.
"""

from __future__ import annotations

import sys
from argparse import ArgumentParser, Namespace

from driveros import llm
from driveros._unicode import terminal_safe
from driveros.cli._options import PROVIDER_HELP, PROVIDER_METAVAR, positive_int, provider_spec
from driveros.config import KEY_VARS, load_environment

DEFAULT_PROMPT = "Explain goroutines in one sentence."
ANSWER_WIDTH = 72


def configure(parser: ArgumentParser) -> None:
    parser.add_argument("--prompt", default=DEFAULT_PROMPT, help="the prompt to send")
    parser.add_argument(
        "--max-tokens", type=positive_int, default=200, metavar="N", help="answer length cap"
    )
    parser.add_argument(
        "--provider",
        action="append",
        type=provider_spec,
        default=None,
        metavar=PROVIDER_METAVAR,
        help=f"only these: {PROVIDER_HELP} (repeat); default: every configured one",
    )
    parser.add_argument(
        "--no-ollama-probe",
        action="store_true",
        help="do not look for an Ollama server on localhost:11434",
    )


def _cell(text: str, width: int) -> str:
    flat = " ".join(terminal_safe(text).split())  # a model's text: escapes shown, not acted on
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def format_table(results: list[llm.FanoutResult]) -> str:
    """A plain-text table; one row per provider, in registry order."""
    header = ("provider", "model", "answer", "tokens in/out", "latency")
    rows = []
    for r in results:
        if r.response is not None:
            answer = _cell(r.response.text() or f"({r.response.stop_reason})", ANSWER_WIDTH)
            tokens = f"{r.usage.input_tokens}/{r.usage.output_tokens}"
            model = r.response.model
        else:
            answer = _cell(f"error: {r.error}", ANSWER_WIDTH)
            tokens = "-"
            model = "-"
        rows.append((r.name, model, answer, tokens, f"{r.latency_s:.2f}s"))
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    lines = [
        "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines) + "\n"


async def run(args: Namespace) -> int:
    env = load_environment()
    registry = await llm.Registry.from_env(env, probe_ollama=not args.no_ollama_probe)
    async with registry:
        names = registry.names()
        models: dict[str, str] = {}
        if args.provider:
            wanted = [spec.name for spec in args.provider]
            unknown = [n for n in wanted if n not in names]
            if unknown:
                sys.stderr.write(
                    f"driveros playground: not configured: {', '.join(unknown)}"
                    f" (configured: {', '.join(names) or 'none'})\n"
                )
                return 1
            names = [n for n in names if n in wanted]
            models = {spec.name: spec.model for spec in args.provider if spec.model}
        if not names:
            keys = ", ".join(v for v in KEY_VARS.values() if v)
            sys.stderr.write(
                "driveros playground: no provider is configured; set one of "
                f"{keys} (or OLLAMA_HOST, or run Ollama on localhost:11434)\n"
            )
            return 1
        req = llm.Request(messages=[llm.user(args.prompt)], max_tokens=args.max_tokens)
        sys.stderr.write(f"asking {', '.join(names)}…\n")
        chosen = {
            n: llm.provider_from_env(n, env, model=models[n])
            if n in models
            else registry.must_get(n)
            for n in names
        }
        try:
            results = await llm.compare(chosen, req)
        finally:
            for n in models:
                await chosen[n].aclose()
    sys.stdout.write(format_table(results))
    return 0 if any(r.ok for r in results) else 5
