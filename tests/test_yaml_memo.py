"""The memo of what the bundled YAML files parse to (roofline.load.yamlmemo): current, exact, and never in the way of
a file that is not one of them."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.load import yamlmemo
from roofline.load.inputs import parse_yaml
from roofline.load.specs import SpecCatalog


def test_the_memo_is_what_the_bundled_files_parse_to_now() -> None:
    """Fails after a bundled spec or descriptor is edited until `python docs/yaml_memo.py` is run."""
    assert yamlmemo.MEMO_FILE.read_text(encoding="utf-8") == yamlmemo.memo_text(parse_yaml), (
        "roofline/load/bundled_yaml.json is stale: run python docs/yaml_memo.py")


def test_every_bundled_file_is_in_the_memo_and_reads_as_parsing_reads_it(monkeypatch: pytest.MonkeyPatch) -> None:
    files = yamlmemo.bundled_files()
    assert len(files) > 40
    memo_hits = {}
    for path in files:
        text = path.read_text(encoding="utf-8")
        memo_hits[path] = yamlmemo.lookup(text)
        assert memo_hits[path] is not yamlmemo.MISSING, path
    monkeypatch.setattr(yamlmemo, "_memo", {})  # an empty memo: everything parsed by PyYAML
    for path, data in memo_hits.items():
        assert yamlmemo._same(data, parse_yaml(path.read_text(encoding="utf-8"), path)), path


def test_each_hit_is_a_fresh_copy() -> None:
    text = yamlmemo.bundled_files()[0].read_text(encoding="utf-8")
    first = parse_yaml(text, "first")
    first.clear()
    assert parse_yaml(text, "second")


def test_a_changed_text_is_parsed_and_refused_as_before(tmp_path: Path) -> None:
    spec = SpecCatalog.bundled().resolve("h100-sxm").path
    text = spec.read_text(encoding="utf-8")
    edited = text + "# a comment makes it another text\n"
    assert yamlmemo.lookup(edited) is yamlmemo.MISSING
    assert parse_yaml(edited, "edited") == parse_yaml(text, "bundled")
    aliased = text + "other: &a 1\nagain: *a\n"
    with pytest.raises(InputError, match="anchors and aliases"):
        parse_yaml(aliased, tmp_path / "aliased.yaml")


def test_types_that_json_would_change_are_refused(tmp_path: Path) -> None:
    dated = tmp_path / "dated.yaml"
    dated.write_text("when: 2026-12-04\n", encoding="utf-8")
    with pytest.raises(ValueError, match="round-trip"):
        yamlmemo.build([dated], parse_yaml)
    keyed = tmp_path / "keyed.yaml"
    keyed.write_text("1: one\n", encoding="utf-8")
    with pytest.raises(ValueError, match="round-trip"):
        yamlmemo.build([keyed], parse_yaml)
    assert yamlmemo._same({"a": [1, 2.0, True, None, "x"]}, {"a": [1, 2.0, True, None, "x"]})
    assert not yamlmemo._same({"a": 1}, {"a": 1.0})
    assert not yamlmemo._same({"a": 1, "b": 2}, {"b": 2, "a": 1})


def test_an_unreadable_memo_is_an_empty_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    broken = tmp_path / "memo.json"
    broken.write_text("{not json", encoding="utf-8")
    monkeypatch.setattr(yamlmemo, "MEMO_FILE", broken)
    monkeypatch.setattr(yamlmemo, "_memo", None)
    text = yamlmemo.bundled_files()[0].read_text(encoding="utf-8")
    assert yamlmemo.lookup(text) is yamlmemo.MISSING
    assert isinstance(parse_yaml(text, "parsed"), dict)
