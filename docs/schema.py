"""Writes docs/results-v1.schema.json, the results format as a JSON Schema generated from the field tables roofline
checks files against (roofline.records.published), and docs/diff-v1.schema.json, what `roofline diff --format json`
writes (roofline.records.diff); with --check says whether the files are current.
tests/test_published_schema.py runs --check, so the published schema cannot drift from the code.

Usage: python docs/schema.py [--check]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline.records.diff import diff_json_schema  # noqa: E402 - after the path above
from roofline.records.published import results_json_schema  # noqa: E402 - after the path above

TARGET = ROOT / "docs" / "results-v1.schema.json"
DIFF_TARGET = ROOT / "docs" / "diff-v1.schema.json"


def text() -> str:
    return json.dumps(results_json_schema(), indent=2, ensure_ascii=False) + "\n"


def diff_text() -> str:
    return json.dumps(diff_json_schema(), indent=2, ensure_ascii=False) + "\n"


def main(argv: list[str]) -> int:
    targets = ((TARGET, text()), (DIFF_TARGET, diff_text()))
    if "--check" in argv:
        for target, wanted in targets:
            if not target.exists() or target.read_text(encoding="utf-8") != wanted:
                print(f"schema: {target.relative_to(ROOT)} is not what the code says; run python docs/schema.py")
                return 1
        return 0
    for target, wanted in targets:
        target.write_text(wanted, encoding="utf-8")
        print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
