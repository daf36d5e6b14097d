"""JSON is parsed in one reader module per format family (issue 41), at most MAX_READERS in all: a static scan of
roofline/ for every place that turns JSON text into values.

The families: documents a user gives, read within size, time, depth and number bounds with messages naming the file
and field (roofline.load.inputs); JSON roofline hands to itself (roofline.load.handoff); Kineto traces
(roofline.kineto.reader, with roofline.kineto.chunks cutting a long one into batches); the JSON inside NVTX range
names (roofline.ncu.nvtx). A new format gets a reader beside these or goes through one of them: a parse written
inline in a command or a renderer is where bounds and messages drift apart.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parent.parent / "roofline"
MAX_READERS = 5
JSON_MODULES = {"json", "orjson", "simplejson", "ujson", "rapidjson"}
PARSERS = {"loads", "load", "JSONDecoder", "raw_decode"}


def parses_json(tree: ast.AST) -> list[int]:
    """The lines where `tree` parses JSON: json.loads / orjson.loads / json.load / json.JSONDecoder /
    .raw_decode(...), `from json import loads`, or fast_json().loads (roofline.load.jsonio's lazy orjson)."""
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and node.attr in PARSERS:
            value = node.value
            if (isinstance(value, ast.Name) and value.id in JSON_MODULES) or node.attr == "raw_decode" or (
                    isinstance(value, ast.Call) and isinstance(value.func, ast.Name) and value.func.id == "fast_json"):
                lines.append(node.lineno)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in JSON_MODULES:
            if any(alias.name in PARSERS for alias in node.names):
                lines.append(node.lineno)
    return sorted(lines)


def readers() -> dict[str, list[int]]:
    """Each module of roofline/ that parses JSON, with the lines where it does."""
    found = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        lines = parses_json(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if lines:
            found[str(path.relative_to(PACKAGE.parent))] = lines
    return found


def test_json_is_parsed_in_at_most_five_modules():
    found = readers()
    assert "roofline/load/inputs.py" in found  # the scan sees the bounded reader of users' documents
    named = "\n".join(f"  {module}: lines {', '.join(map(str, lines))}" for module, lines in found.items())
    assert len(found) <= MAX_READERS, (
        f"JSON is parsed in {len(found)} modules, more than {MAX_READERS}:\n{named}\nread it through the reader of "
        "its family: roofline.load.inputs (a user's documents, bounded), roofline.load.handoff (what roofline wrote "
        "for itself), roofline.kineto.reader (traces), roofline.ncu.nvtx (NVTX range names)")


def test_the_scan_sees_each_way_of_parsing():
    sample = ("import json, orjson\nfrom json import loads\njson.loads('1')\norjson.loads(b'1')\n"
              "json.load(f)\nfast_json().loads(b'1')\ndecoder.raw_decode('1')\nself.loads(b'1')\njson.dumps(1)\n")
    assert parses_json(ast.parse(sample)) == [2, 3, 4, 5, 6, 7]
