"""Hostile input files: each refused with exit 2 and one line naming the file, within a second of CPU time (wall
time where a reader could block) and under 200 MB.

The cases are those a pull request could bring into CI: special files (a FIFO, a folder, a character device),
an alias bomb, nesting a million levels deep, numbers out of range or thousands of digits long, digits that are
not ASCII. The reader is tested directly and through the CLI.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TOY_SPEC
from roofline.errors import InputError
from roofline.load.inputs import MAX_DEPTH, parse_json, parse_yaml, read_input_bytes, read_input_text
from roofline.model.units import MAX_DIGITS

RESULTS = Path(__file__).parent / "data" / "results" / "h100.json"

# A few hundred bytes that expand to 9**9 strings when aliases are followed.
ALIAS_BOMB = 'a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n' + "".join(
    f"{n}: &{n} [{', '.join([f'*{p}'] * 9)}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)


def one_line_naming(err: str, path: Path) -> bool:
    lines = err.strip().splitlines()
    return len(lines) == 1 and str(path) in lines[0] and "Traceback" not in err


def spec_text(bandwidth: str = "3.35 TB/s", extra: str = "") -> str:
    memory = f"memory: {{bandwidth: {bandwidth}, latency: 600 ns}}\n"
    return f"id: x\nname: X\n{memory}compute: {{fp32: 60 TFLOP/s}}\n{extra}"


def results_with(tmp_path: Path, replace: tuple[str, str]) -> Path:
    text = RESULTS.read_text(encoding="utf-8")
    assert replace[0] in text
    path = tmp_path / "results.json"
    path.write_text(text.replace(replace[0], replace[1], 1), encoding="utf-8")
    return path


def isolated(*argv: object) -> tuple[int, str, float, float]:
    """Run the CLI in a fresh interpreter: (exit code, stderr, seconds, peak resident MB of that process)."""
    # Peak RSS from /proc (VmHWM, this process image only): ru_maxrss would include the forking pytest's size.
    script = (
        "import resource, sys, time\n"
        "from roofline.cli import main\n"
        "start = time.process_time()\n"
        "try:\n    main(sys.argv[1:])\n    code = 0\n"
        "except SystemExit as exc:\n    code = exc.code\n"
        "seconds = time.process_time() - start\n"
        "try:\n"
        "    hwm = [l for l in open('/proc/self/status') if l.startswith('VmHWM')][0].split()[1]\n"
        "    megabytes = int(hwm) / 1024\n"
        "except OSError:\n"
        "    megabytes = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024\n"
        "print(code, seconds, megabytes)\n"
    )
    proc = subprocess.run([sys.executable, "-c", script, *map(str, argv)], capture_output=True, text=True, timeout=60)
    code, seconds, megabytes = proc.stdout.split()[-3:]
    return int(code), proc.stderr, float(seconds), float(megabytes)


# ---- special files -------------------------------------------------------------------------------------


def test_a_fifo_is_refused_at_once_not_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "spec.yaml"
    os.mkfifo(fifo)
    start = time.perf_counter()  # wall time: a reader blocked on the FIFO spends no CPU
    with pytest.raises(InputError, match=r"FIFO.*not a regular file"):
        read_input_bytes(fifo, 1 << 20, "a YAML file")
    assert time.perf_counter() - start < 5.0


@pytest.mark.parametrize(
    "argv",
    [("specs", "show", "{p}"), ("report", "{p}"), ("report", str(RESULTS), "--baseline", "{p}"),
     ("report", str(RESULTS), "--gates", "{p}"), ("import", "ncu", "{p}"),
     ("analyze", "--kernels", "{p}"),
     ("plot", "--sweep", "{p}", "-o", "{p}.png")],
    ids=["spec", "results", "baseline", "gates", "ncu-csv", "descriptor", "sweep"],
)
def test_every_reader_refuses_a_fifo_through_the_cli(run_cli, tmp_path: Path, argv: tuple[str, ...]) -> None:
    fifo = tmp_path / ("input.yaml" if "yaml" in argv[0] or argv[0] in ("specs", "analyze") else "input.json")
    os.mkfifo(fifo)
    start = time.perf_counter()  # wall time: a reader blocked on the FIFO spends no CPU
    code, _, err = run_cli(*(a.replace("{p}", str(fifo)) for a in argv))
    assert time.perf_counter() - start < 5.0
    assert code == 2, err
    assert one_line_naming(err, fifo), err
    assert "FIFO" in err


def test_a_folder_is_refused_with_the_reason(run_cli, tmp_path: Path) -> None:
    folder = tmp_path / "results.json"
    folder.mkdir()
    code, _, err = run_cli("report", folder)
    assert code == 2 and one_line_naming(err, folder) and "is a folder" in err


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_character_device_is_refused_before_reading(run_cli) -> None:
    """/dev/zero never ends: the reader must refuse it from its type, never start reading."""
    start = time.process_time()
    code, _, err = run_cli("specs", "show", "/dev/zero")
    assert time.process_time() - start < 1.0
    assert code == 2 and one_line_naming(err, Path("/dev/zero")) and "character device" in err


def test_size_limit_counts_bytes_read_not_the_size_reported(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"a" * 100)
    assert read_input_bytes(path, 100, "a file") == b"a" * 100
    with pytest.raises(InputError, match="larger than 99 bytes"):
        read_input_bytes(path, 99, "a file")


def test_text_must_be_utf8_and_the_message_says_where(tmp_path: Path) -> None:
    path = tmp_path / "f.yaml"
    path.write_bytes(b"id: x\nname: \xff\n")
    with pytest.raises(InputError, match=r"not UTF-8 text \(line 2"):
        read_input_text(path, 1000, "a YAML file")
    path.write_bytes(b"\xef\xbb\xbfid: x\n")  # a byte-order mark is not part of the text
    assert read_input_text(path, 1000, "a YAML file") == "id: x\n"


# ---- structure -----------------------------------------------------------------------------------------


def test_an_alias_bomb_is_refused_quickly_in_little_memory(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB, encoding="utf-8")
    assert len(ALIAS_BOMB) < 500
    code, err, seconds, megabytes = isolated("specs", "show", path)
    assert code == 2 and one_line_naming(err, path), err
    assert "aliases" in err and "line 2" in err
    assert seconds < 1.0 and megabytes < 200


def test_an_anchor_without_aliases_is_fine_but_an_alias_is_refused() -> None:
    assert parse_yaml("a: &x 1\nb: 2\n", "f.yaml") == {"a": 1, "b": 2}
    with pytest.raises(InputError, match=r"f.yaml: line 2: YAML anchors and aliases"):
        parse_yaml("a: &x [1]\nb: *x\n", "f.yaml")


@pytest.mark.parametrize(
    "text",
    ["[" * (1 << 20), "[" * 5000 + "]" * 5000, "- " * 200_000 + "x\n",
     "a:\n" + "".join(" " * i + "b:\n" for i in range(1, 200))],
    ids=["flow-1MiB-unclosed", "flow-closed", "block-sequence", "block-mapping"],
)
def test_deep_yaml_is_refused_quickly_in_little_memory(tmp_path: Path, text: str) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text(text, encoding="utf-8")
    code, err, seconds, megabytes = isolated("specs", "show", path)
    assert code == 2 and one_line_naming(err, path), err
    assert f"nested more than {MAX_DEPTH} levels" in err
    assert seconds < 1.0 and megabytes < 200


@pytest.mark.parametrize(
    ("text", "fragment"),
    [("a: !!timestamp x\n", "line 1: cannot read 'x' as timestamp"), ("a: !!bool x\n", "cannot read 'x' as bool"),
     ("b: 1\na: 2026-13-45\n", "line 2: cannot read '2026-13-45' as timestamp (month must be in 1..12)"),
     ("a: !!python/name:os.system\n", "YAML error: line 1"), ("a: !!omap [1]\n", "YAML error"),
     ("{[1]: 2}\n", "unhashable key"), ("--- 1\n--- 2\n", "YAML syntax error: line 2")],
    ids=["timestamp-tag", "bool-tag", "bad-date", "python-tag", "omap", "unhashable-key", "two-documents"],
)
def test_yaml_values_pyyaml_cannot_build_are_input_errors(text: str, fragment: str) -> None:
    with pytest.raises(InputError, match=re.escape(fragment)):
        parse_yaml(text, "f.yaml")


def test_yaml_depth_limit_is_exact() -> None:
    assert parse_yaml("[" * MAX_DEPTH + "]" * MAX_DEPTH, "f.yaml") is not None
    with pytest.raises(InputError, match="line 1: is nested"):
        parse_yaml("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "f.yaml")


@pytest.mark.parametrize("text", ["[" * (1 << 20), "[" * 500 + "]" * 500, '{"a": ' * 100 + "1" + "}" * 100],
                         ids=["1MiB-unclosed", "500-closed", "objects"])
def test_deep_json_results_are_refused_naming_the_file(tmp_path: Path, text: str) -> None:
    path = tmp_path / "results.json"
    path.write_text(text, encoding="utf-8")
    code, err, seconds, megabytes = isolated("report", path)
    assert code == 2 and one_line_naming(err, path), err
    assert "nested" in err and "Recursion" not in err
    assert seconds < 1.0 and megabytes < 200


def test_json_depth_limit_is_exact() -> None:
    assert parse_json("[" * MAX_DEPTH + "]" * MAX_DEPTH, "r.json") is not None
    with pytest.raises(InputError, match="nested more than"):
        parse_json("[" * (MAX_DEPTH + 1) + "]" * (MAX_DEPTH + 1), "r.json")


# ---- numbers -------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("bandwidth", "extra", "fragment"),
    [("1e999999 TB/s", "", "finite"),
     ("1e400 B/s", "", "finite"),
     ("1.0e+999999", "", "not a finite number"),
     (".inf", "", "not a finite number"),
     ("1" * 5000 + " B/s", "", f"more than {MAX_DIGITS} digits"),
     ("1" * 5000, "", f"more than {MAX_DIGITS} digits"),
     ("3.35 TB/s", "sm_count: " + "9" * 5000 + "\n", f"more than {MAX_DIGITS} digits"),
     ("3.35 TB/s", "sm_count: 0x" + "f" * 5000 + "\n", f"more than {MAX_DIGITS} digits"),
     ("\u0663\u066b\u0663\u0665 TB/s", "", "ASCII"),  # ٣٫٣٥ in Arabic-Indic digits
     ("\u0661\u0662 TB/s", "", "ASCII"),
     ("\uff13 TB/s", "", "ASCII"),  # fullwidth 3
     ("1e-999 B/s", "", "must be positive")],
    ids=["1e999999-TB/s", "1e400", "yaml-float-overflow", "yaml-inf", "5000-digit-string", "5000-digit-int",
         "5000-digit-sm-count", "5000-hex-digits", "arabic-indic-decimal", "arabic-indic", "fullwidth", "underflow"],
)
def test_bad_numbers_in_a_spec_are_refused(
    run_cli, tmp_path: Path, bandwidth: str, extra: str, fragment: str
) -> None:
    path = tmp_path / "spec.yaml"
    path.write_text(spec_text(bandwidth, extra), encoding="utf-8")
    code, _, err = run_cli("specs", "show", path)
    assert code == 2 and one_line_naming(err, path), err
    assert fragment in err
    assert len(err) < 400


@pytest.mark.parametrize(
    ("value", "fragment"),
    [("1" * 41, f"more than {MAX_DIGITS} digits"), ("1" * 5000, "longer than"), ("\u0661\u0662", "ASCII"),
     ("\uff11\uff12", "ASCII"), ("1e999999", "out of range")],
    ids=["41-digits", "5000-digits", "arabic-indic", "fullwidth", "1e999999"],
)
def test_bad_numbers_on_the_command_line_are_refused(run_cli, value: str, fragment: str) -> None:
    code, _, err = run_cli("analyze", "vector_add", "-p", f"n={value}")
    assert code == 2 and "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1 and "-p" in err and fragment in err


@pytest.mark.parametrize(
    ("old", "new", "fragment"),
    [('"n": 268435456', '"n": ' + "1" * 5000, f"more than {MAX_DIGITS} digits"),
     ('"sm_clock": 1980000000.0', '"sm_clock": 1e999999', "finite range"),
     ('"sm_clock": 1980000000.0', '"sm_clock": NaN', "NaN is not JSON")],
    ids=["5000-digit-int", "1e999999", "NaN"],
)
def test_bad_numbers_in_results_are_refused(run_cli, tmp_path: Path, old: str, new: str, fragment: str) -> None:
    path = results_with(tmp_path, (old, new))
    code, _, err = run_cli("report", path)
    assert code == 2 and one_line_naming(err, path), err
    assert fragment in err


def test_a_5000_digit_number_in_a_descriptor_is_refused(run_cli, tmp_path: Path) -> None:
    path = tmp_path / "k.yaml"
    path.write_text(f"name: k\ndescription: d\npattern: map\ndtype: float32\nparams: {{n: {'7' * 5000}}}\n"
                    "flops: n\nbytes: 8 * n\n", encoding="utf-8")
    code, _, err = run_cli("analyze", "--kernels", path, "k")
    assert code == 2 and one_line_naming(err, path), err
    assert "line 5" in err and f"more than {MAX_DIGITS} digits" in err


# ---- the lazy spec catalogue answers as the full one does ----------------------------------------------


def test_lazy_spec_lookup_agrees_with_the_full_catalogue(bundled_specs) -> None:
    from roofline.load.specs import SpecCatalog

    for spec in bundled_specs.specs:
        assert spec.path is not None and spec.path.stem == spec.id  # what the lazy lookup relies on
        for name in (spec.id, *spec.aliases):
            assert SpecCatalog.bundled().resolve(name).id == spec.id
    assert SpecCatalog.from_paths([TOY_SPEC]).resolve("toy").id == "toy"


def test_results_written_by_the_tool_read_back(tmp_path: Path) -> None:
    """The limits do not refuse what `measure` writes: every bundled results file parses."""
    for path in (Path(__file__).parent / "data" / "results").glob("*.json"):
        text = path.read_text(encoding="utf-8")
        try:
            expected = json.loads(text)
        except json.JSONDecodeError:
            continue
        assert parse_json(text, path) == expected


# ---- libyaml and the pure-Python loader agree, and the fallback is as safe ------------------------------


def test_libyaml_and_pure_python_read_every_bundled_file_alike(monkeypatch: pytest.MonkeyPatch) -> None:
    import yaml

    import roofline.load.inputs

    root = Path(__file__).parent.parent
    files = sorted((root / "specs").glob("*.yaml")) + sorted((root / "kernels").glob("*.yaml"))
    fast = [parse_yaml(p.read_text(encoding="utf-8"), p) for p in files]
    monkeypatch.setattr(roofline.load.inputs, "_yaml_loader", lambda: yaml.SafeLoader)
    assert [parse_yaml(p.read_text(encoding="utf-8"), p) for p in files] == fast


@pytest.mark.parametrize(
    ("text", "fragment"),
    [(ALIAS_BOMB, "line 2: YAML anchors and aliases"), ("[" * (1 << 20), "nested more than"),
     ("- " * 100_000 + "x\n", "nested more than"), ("a: " + "1" * 5000 + "\n", "more than 40 digits"),
     ("a: 1.0e+999999\n", "not a finite number"), ("a: 2026-13-45\n", "line 1: cannot read")],
    ids=["alias-bomb", "deep-flow", "deep-block", "5000-digits", "float-overflow", "bad-date"],
)
def test_the_pure_python_fallback_refuses_the_same(monkeypatch: pytest.MonkeyPatch, text: str, fragment: str) -> None:
    import yaml

    import roofline.load.inputs

    monkeypatch.setattr(roofline.load.inputs, "_yaml_loader", lambda: yaml.SafeLoader)
    start = time.process_time()
    with pytest.raises(InputError, match=fragment):
        parse_yaml(text, "f.yaml")
    assert time.process_time() - start < 2.0  # PyYAML's pure-Python reader takes ~0.8 s of CPU on the deep flow


@pytest.mark.parametrize("name", ["x" * 5000, "a\x00b", "x" * 5000 + ".yaml"], ids=["too-long", "nul", "long-path"])
def test_a_spec_name_the_os_refuses_is_an_input_error(run_cli, name: str) -> None:
    code, _, err = run_cli("analyze", "vector_add", "--spec", name)
    assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
