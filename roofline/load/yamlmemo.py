"""What the bundled YAML files (specs/, kernels/) parse to, computed ahead, so `roofline analyze` neither imports
PyYAML nor parses forty files at every start (issue 30: analyze within 2.2x of a bare `import click, rich, yaml`).

The memo maps a file's whole text to the JSON of its data, so it is keyed by what is read, not by a path or a
time: a bundled file edited since, or any other file, misses and is parsed as before (roofline.load.inputs
.parse_yaml), and a hit gives exactly what parsing gives (the texts in the memo parse without error, and their
data round-trips through JSON unchanged, types included: `build` refuses any that does not). Each hit is decoded
afresh, so a caller that changes its copy changes nothing else. `python docs/yaml_memo.py` rewrites the memo;
tests/test_yaml_memo.py fails while it differs from what the bundled files parse to.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Callable, Iterable

from roofline.load.bundled import bundled_dir
from roofline.load import handoff

MEMO_VERSION = 1
MEMO_FILE = Path(__file__).with_name("bundled_yaml.json")
MISSING = object()  # lookup's answer for a text the memo does not hold

_memo: dict[str, str] | None = None


def _load() -> dict[str, str]:
    """The memo, read once per process; an absent or unreadable memo is an empty one (everything is parsed)."""
    global _memo
    if _memo is None:
        try:
            doc = handoff.read(MEMO_FILE)
            _memo = dict(doc["texts"]) if doc.get("version") == MEMO_VERSION else {}
        except (OSError, ValueError, KeyError, TypeError):
            _memo = {}
    return _memo


def lookup(text: str) -> Any:
    """The data `text` parses to, a fresh copy; MISSING when the memo does not hold this exact text."""
    data = _load().get(text)
    return MISSING if data is None else handoff.loads(data)


def bundled_files() -> list[Path]:
    """The YAML files roofline ships: every spec and kernel descriptor."""
    return sorted([*bundled_dir("specs").glob("*.yaml"), *bundled_dir("kernels").glob("*.yaml")])


def _same(a: Any, b: Any) -> bool:
    """Equal and of the same types all the way down (1, 1.0 and True are different values here)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict):
        return list(a) == list(b) and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    return a == b


def build(files: Iterable[Path], parse: Callable[[str, object], Any]) -> dict[str, Any]:
    """The memo document for `files`: each text with the JSON of what `parse` makes of it. A file whose data
    JSON cannot carry exactly (a date, a key that is not a string) is a ValueError naming it."""
    texts: dict[str, str] = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        data = parse(text, path)
        try:
            encoded = json.dumps(data, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError):  # a date, say
            encoded = "null"
        if not _same(handoff.loads(encoded), data):
            raise ValueError(f"{path}: its data does not round-trip through JSON; it cannot be memoised")
        texts[text] = encoded
    return {"version": MEMO_VERSION, "texts": texts}


def memo_text(parse: Callable[[str, object], Any]) -> str:
    """What MEMO_FILE should hold for the bundled files as they are now."""
    return json.dumps(build(bundled_files(), parse), ensure_ascii=False, indent=0, sort_keys=True) + "\n"

