"""The deny list's matching (``secret_path_reason``) is one regular expression per list for
speed (a plain directory's start checks every file): it must say exactly what matching each
glob in turn says, for any path (hypothesis)."""

from __future__ import annotations

import fnmatch

from hypothesis import given, settings
from hypothesis import strategies as st

from driveros.sandbox import secret_path_reason
from driveros.sandbox._secrets import (
    PUBLIC_SUFFIXES,
    SECRET_DIRS,
    SECRET_NAMES,
    SECRET_PATHS,
    TEMPLATE_NAMES,
)

SUFFIX = "; secret files are not read by the agent (deny list, docs/sandbox.md)"


def one_by_one(path: str) -> str | None:
    """The reference: each glob of each list in turn (as the deny list is documented)."""
    parts = [p.casefold() for p in path.replace("\\", "/").split("/") if p not in ("", ".")]
    if not parts or ".." in parts:
        return None  # not generated: ``..`` needs normalizing first
    name = parts[-1]
    if name.endswith(PUBLIC_SUFFIXES) or any(fnmatch.fnmatchcase(name, t) for t in TEMPLATE_NAMES):
        return None
    for pattern, why in SECRET_NAMES:
        if fnmatch.fnmatchcase(name, pattern):
            return why + SUFFIX
    for pattern, why in SECRET_PATHS:
        depth = pattern.count("/") + 1
        if len(parts) >= depth and fnmatch.fnmatchcase("/".join(parts[-depth:]), pattern):
            return why + SUFFIX
    for directory, why in SECRET_DIRS:
        if directory in parts[:-1]:
            return why + SUFFIX
    return None


def _concrete(glob: str) -> list[str]:
    """Names a glob matches (and near misses): its wildcards filled in a few ways."""
    fills = ["", "x", "prod", ".bak", "A"]
    plain = glob.replace("[", "").replace("]", "").replace("?", "a")
    return [plain.replace("*", f) for f in fills]


_GLOBS = [p for p, _ in SECRET_NAMES] + list(TEMPLATE_NAMES) + [p for p, _ in SECRET_PATHS]
_PIECES = sorted(
    {c for g in _GLOBS for part in g.split("/") for c in _concrete(part)}
    | {d for d, _ in SECRET_DIRS}
    | {"src", "a.py", "id_rsa.pub", "config", "x.pem", "notes.txt"}
)
_COMPONENT = st.one_of(
    st.sampled_from(_PIECES).map(lambda s: s.upper() if len(s) % 3 == 0 else s),
    st.text(alphabet="ab.-_*[]?env", min_size=1, max_size=8).filter(lambda s: s != ".."),
)


@settings(max_examples=2000, deadline=None)
@given(parts=st.lists(_COMPONENT, min_size=1, max_size=4), absolute=st.booleans())
def test_matching_all_globs_at_once_says_what_one_by_one_says(
    parts: list[str], absolute: bool
) -> None:
    path = ("/" if absolute else "") + "/".join(parts)
    assert secret_path_reason(path) == one_by_one(path)
