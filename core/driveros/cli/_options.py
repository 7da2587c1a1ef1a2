"""Argument types and options shared by every subcommand (one meaning per flag).

Every type here raises ``ArgumentTypeError`` with its own sentence, so argparse never
shows a Python type name ("invalid _positive_int value"). ``--provider`` takes
``NAME[:MODEL]`` everywhere; ``--model`` sets the model of the one provider a subcommand
uses and wins over a ``:MODEL`` suffix (docs/commands.md, "Conventions").

The run options' flags are not written here: :func:`add_run_options` makes them from the
fields of ``driveros.runs.RunSpec`` (the one declaration of each option's type, default,
range, choices and help), and :func:`run_values` gives the parsed values back by field name.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, NamedTuple, get_args, get_origin

from pydantic import BaseModel
from pydantic.fields import FieldInfo
from pydantic_core import PydanticUndefined

from driveros._errors import ConfigError
from driveros.config import PROVIDER_ORDER

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


#: The unit a run option's name ends with: its flag leaves it out (``max_wall_s`` is
#: ``--max-wall``) and it decides how the value is read.
_UNITS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "_s": ("SECONDS", positive_seconds),
    "_usd": ("USD", positive_dollars),
    "_tokens": ("TOKENS", positive_int),
}
#: Metavars a field's type does not tell.
_METAVARS = {"allow_secret_files": "GLOB"}
#: Run options whose flag also has a ``--no-`` form (an option on by default always has one).
NEGATABLE = frozenset({"memory"})
#: Where a parser remembers which fields its generated flags set (see :func:`run_values`).
_GENERATED = "_generated_fields"


def option_dest(name: str, field: FieldInfo) -> str:
    """The ``argparse`` destination of the flag of field ``name``: the name without its unit
    (``max_wall_s``: ``max_wall``), singular for a repeatable list (``allow_secret_file``)."""
    for unit in _UNITS:
        if name.endswith(unit):
            return name.removesuffix(unit)
    if get_origin(field.annotation) is list:
        return name.removesuffix("s")
    return name


def option_flag(name: str, field: FieldInfo) -> str:
    """The flag of field ``name``: ``--`` and its destination with dashes."""
    return "--" + option_dest(name, field).replace("_", "-")


def add_run_options(
    parser: argparse.ArgumentParser, *names: str, model: type[BaseModel] | None = None
) -> None:
    """The flags of the fields ``names`` of ``model`` (default ``driveros.runs.RunSpec``, whose
    fields are every run option: :class:`~driveros.runs.RunOptions`,
    :class:`~driveros.runs.HeadlessOptions` and one run's own), made from their declaration:
    ``--sandbox`` for ``sandbox``, choices from the field's ``Literal``, the default, the
    bounds' shape and the help from the field. A ``bool`` that is off by default is a switch
    (``--network``); one on by default or in :data:`NEGATABLE` also takes ``--no-NAME``.
    ``provider`` and ``model`` are ``--provider NAME[:MODEL]`` and ``--model``."""
    from driveros.runs import RunSpec

    fields = (model or RunSpec).model_fields
    if "provider" in names:
        add_provider(parser, model="model" in names)
    made: list[tuple[str, str]] = []
    for name in names:
        if name in ("provider", "model"):
            if "provider" not in names:
                raise TypeError("the run option 'model' comes with 'provider'")
            made.append((name, name))
            continue
        _add_field(parser, name, fields[name])
        made.append((name, option_dest(name, fields[name])))
    done = parser.get_default(_GENERATED) or ()
    parser.set_defaults(**{_GENERATED: (*done, *made)})


def _add_field(parser: argparse.ArgumentParser, name: str, field: FieldInfo) -> None:
    flag = option_flag(name, field)
    description = field.description or ""
    if not description:
        raise TypeError(f"the run option {name!r} has no description (its flag's help)")
    # "Turn cap" reads "turn cap" in a flag's help; "US dollars" stays as it is
    first = description[:1] if description[1:2].isupper() else description[:1].lower()
    help_text = first + description[1:].rstrip(".")
    dest = option_dest(name, field)
    annotation = field.annotation
    shape = tuple(a for a in get_args(annotation) if a is not type(None))
    if annotation is bool:
        negatable = field.default is True or name in NEGATABLE
        action: Any = argparse.BooleanOptionalAction if negatable else "store_true"
        parser.add_argument(flag, dest=dest, action=action, default=field.default, help=help_text)
    elif get_origin(annotation) is Literal:
        parser.add_argument(
            flag, dest=dest, choices=get_args(annotation), default=field.default, help=help_text
        )
    elif get_origin(annotation) is list and get_args(annotation) == (str,):
        parser.add_argument(
            flag,
            dest=dest,
            action="append",
            default=None,
            metavar=_METAVARS.get(name, "VALUE"),
            help=help_text,
        )
    elif (annotation in (int, float) or shape in ((int,), (float,))) and field.default is not (
        PydanticUndefined
    ):
        unit = next((u for u in _UNITS if name.endswith(u)), None)
        metavar, kind = _UNITS[unit] if unit else ("N", positive_int)
        if (int in shape or annotation is int) != (kind is positive_int):
            raise TypeError(f"the run option {name!r} is not read as its unit says")
        parser.add_argument(
            flag, dest=dest, type=kind, default=field.default, metavar=metavar, help=help_text
        )
    else:
        raise TypeError(f"no flag shape for the run option {name!r} ({annotation})")


def run_values(args: argparse.Namespace) -> dict[str, Any]:
    """The fields the generated flags of ``args`` set, by field name: what the user gave or
    the field's default (a repeatable flag never given sets nothing, so the field's own
    default holds); ``provider`` and ``model`` as :func:`chosen_provider` reads them."""
    made: tuple[tuple[str, str], ...] = getattr(args, _GENERATED, ())
    values: dict[str, Any] = {}
    provider, model = chosen_provider(args)
    for name, dest in made:
        if name == "provider":
            values[name] = provider
        elif name == "model":
            values[name] = model
        elif getattr(args, dest) is None and dest + "s" == name:
            continue  # a repeatable flag never given: the field's own default holds
        else:
            values[name] = getattr(args, dest)
    return values


def invalid_run_settings(exc: ValidationError) -> ConfigError:
    """Run options refused by ``driveros.runs.RunOptions``, said in one line."""
    problems = "; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in exc.errors())
    return ConfigError(f"invalid run settings: {problems}")
