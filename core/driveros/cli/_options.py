"""Argument types and options shared by every subcommand (one meaning per flag).

Every type here raises ``ArgumentTypeError`` with its own sentence, so argparse never
shows a Python type name ("invalid _positive_int value"). ``--provider`` takes
``NAME[:MODEL]`` everywhere; ``--model`` sets the model of the one provider a subcommand
uses and wins over a ``:MODEL`` suffix (docs/cli.md, "Conventions").
"""

from __future__ import annotations

import argparse
import math
from typing import TYPE_CHECKING, Any, NamedTuple, get_args

from driveros._errors import ConfigError
from driveros.config import MAX_ITERATIONS, MAX_WALL_S, PROVIDER_ORDER

if TYPE_CHECKING:
    from pydantic import ValidationError

PROVIDER_METAVAR = "NAME[:MODEL]"
PROVIDER_HELP = f"{' | '.join(PROVIDER_ORDER)}, optionally with :MODEL"


class ProviderSpec(NamedTuple):
    name: str
    model: str | None

    def __str__(self) -> str:
        return f"{self.name}:{self.model}" if self.model else self.name


def provider_spec(text: str) -> ProviderSpec:
    """``NAME[:MODEL]`` with NAME one of the known providers."""
    name, colon, model = text.strip().partition(":")
    if name not in PROVIDER_ORDER:
        raise argparse.ArgumentTypeError(
            f"unknown provider {text!r}; choose one of {', '.join(PROVIDER_ORDER)} "
            "(optionally NAME:MODEL)"
        )
    if colon and not model.strip():
        raise argparse.ArgumentTypeError(f"{text!r} names no model after ':'")
    return ProviderSpec(name, model.strip() or None)


def model_name(text: str) -> str:
    if not text.strip():
        raise argparse.ArgumentTypeError("the model name is empty")
    return text.strip()


def _integer(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text!r}")
    return value


def non_negative_int(text: str) -> int:
    value = _integer(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text!r}")
    return value


def positive_seconds(text: str) -> float:
    """A finite number of seconds above zero (``nan``, ``inf`` and ``-1`` are refused)."""
    try:
        value = float(text.strip())
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(
            f"must be a finite number of seconds above 0, got {text!r}"
        )
    return value


def positive_dollars(text: str) -> float:
    """A finite amount of US dollars above zero (``$0.50`` and ``0.5`` both work)."""
    try:
        value = float(text.strip().removeprefix("$"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an amount of US dollars, got {text!r}"
        ) from None
    if not math.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"must be a finite amount above 0, got {text!r}")
    return value


def add_provider(parser: argparse.ArgumentParser, *, model: bool = True, help: str = "") -> None:
    """``--provider NAME[:MODEL]`` (one provider) and, with ``model``, ``--model NAME``."""
    parser.add_argument(
        "--provider",
        type=provider_spec,
        metavar=PROVIDER_METAVAR,
        help=help or f"{PROVIDER_HELP} (default: the first configured one)",
    )
    if model:
        parser.add_argument(
            "--model",
            type=model_name,
            help="model name (wins over :MODEL and the *_MODEL variables)",
        )


def chosen_provider(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """(provider, model) from ``--provider NAME[:MODEL]`` and ``--model``."""
    spec: ProviderSpec | None = getattr(args, "provider", None)
    model: str | None = getattr(args, "model", None)
    if spec is None:
        return None, model
    return spec.name, model or spec.model


def add_limits(parser: argparse.ArgumentParser) -> None:
    """``--max-iterations`` and ``--max-wall``, defaulting to the run options' limits."""
    add = parser.add_argument
    add(
        "--max-iterations",
        type=positive_int,
        default=MAX_ITERATIONS,
        metavar="N",
        help="model turns",
    )
    add("--max-wall", type=positive_seconds, default=MAX_WALL_S, metavar="SECONDS", help="run time")


def add_run_options(parser: argparse.ArgumentParser, *names: str) -> None:
    """The flags of the run options ``names`` (fields of ``driveros.runs.RunOptions``), made
    from their declaration: ``--sandbox`` for ``sandbox``, choices from the field's
    ``Literal``, the default and the help from the field. A ``bool`` that is off by default is
    a switch (``--network``); one in :data:`NEGATABLE` also takes ``--no-NAME``."""
    from driveros.runs import RunOptions

    for name in names:
        field = RunOptions.model_fields[name]
        flag = "--" + name.replace("_", "-")
        description = field.description or ""
        help_text = description[:1].lower() + description[1:].rstrip(".")
        choices = get_args(field.annotation)
        if field.annotation is bool:
            action: Any = argparse.BooleanOptionalAction if name in NEGATABLE else "store_true"
            parser.add_argument(flag, action=action, default=field.default, help=help_text)
        elif choices and all(isinstance(c, str) for c in choices):
            parser.add_argument(flag, choices=choices, default=field.default, help=help_text)
        else:
            raise TypeError(f"no flag shape for the run option {name!r} ({field.annotation})")


#: Run options whose flag also has a ``--no-`` form.
NEGATABLE = frozenset({"memory"})


def invalid_run_settings(exc: ValidationError) -> ConfigError:
    """Run options refused by ``driveros.runs.RunOptions``, said in one line."""
    problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return ConfigError(f"invalid run settings: {problems}")
