"""Tolerant extraction of the JSON object a model was asked to answer with."""

from __future__ import annotations

import json
import re
from typing import Any

from driveros._errors import DriverosError

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.DOTALL)


class StructuredOutputError(DriverosError):
    """The model's reply did not contain the JSON object it was asked for."""


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text``: inside a code fence, bare, or embedded in prose."""
    candidates = [m.group(1) for m in _FENCE.finditer(text)]
    candidates.append(text)
    decoder = json.JSONDecoder()
    for candidate in candidates:
        start = candidate.find("{")
        while start != -1:
            try:
                value, _ = decoder.raw_decode(candidate, start)
            except ValueError:
                start = candidate.find("{", start + 1)
                continue
            if isinstance(value, dict):
                return value
            start = candidate.find("{", start + 1)
    raise StructuredOutputError("the reply has no JSON object", reply=text[:500])
