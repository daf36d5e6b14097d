"""Writes roofline/load/bundled_yaml.json, what the bundled specs and kernel descriptors parse to (roofline.load
.yamlmemo), so a fast command reads their data without importing PyYAML; with --check says whether it is current.
tests/test_yaml_memo.py holds the file to the bundled files too, so an edited spec or descriptor without a new memo
fails the suite (roofline still reads it right: a text the memo does not hold is parsed).

Usage: python docs/yaml_memo.py [--check]
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from roofline.load import yamlmemo  # noqa: E402 - after the path above
from roofline.load.inputs import parse_yaml  # noqa: E402


def main(argv: list[str]) -> int:
    wanted = yamlmemo.memo_text(parse_yaml)
    target = yamlmemo.MEMO_FILE
    if "--check" in argv:
        if not target.exists() or target.read_text(encoding="utf-8") != wanted:
            print(f"yaml memo: {target.relative_to(ROOT)} is not what the bundled files parse to; "
                  "run python docs/yaml_memo.py")
            return 1
        return 0
    target.write_text(wanted, encoding="utf-8")
    print(f"wrote {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
