"""The README is part of the product: its worked kernel example must run, and every command must appear in it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest

from roofline.cli import cli

README = Path(__file__).resolve().parent.parent / "README.md"
TEXT = README.read_text(encoding="utf-8")


def _example_files() -> dict[str, str]:
    files = {}
    for lang, comment, name, body in re.findall(r"```(yaml|python|cuda)\n(#|//) my_kernels/(\S+)\n(.*?)```", TEXT, re.S):
        files[name] = body
    return files


def test_readme_kernel_example_is_complete():
    assert set(_example_files()) == {"saxpy.yaml", "saxpy.py", "saxpy.cu"}


def test_readme_kernel_example_analyses_and_measures(tmp_path, run_cli):
    folder = tmp_path / "my_kernels"
    folder.mkdir()
    for name, body in _example_files().items():
        (folder / name).write_text(body)
    result = run_cli("analyze", "--kernels", folder, "saxpy", "--spec", "a100", "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["kernels"][0]["intensity"] == pytest.approx(1 / 6)
    result = run_cli("measure", "--backend", "numpy", "--kernels", folder, "saxpy", "-p", "n=4099",
                     "--min-time", "0", "--min-repeats", "2", "--format", "json")
    assert result.code == 0, result.err
    assert json.loads(result.out)["kernels"][0]["status"] == "OK"


@pytest.mark.parametrize("name", cli.list_commands(click.Context(cli)))
def test_every_command_is_in_the_readme(name):
    assert f"roofline {name}" in TEXT


def test_readme_has_exactly_two_fresh_machine_commands():
    section = TEXT.split("## Set up on a fresh machine", 1)[1].split("\n## ", 1)[0]
    commands = re.findall(r"```bash\n(.*?)```", section, re.S)
    assert len(commands) == 2
    assert "roofline analyze" in commands[0]
    assert "pytest" in commands[1] and ".[test]" in commands[1]


@pytest.mark.gpu
def test_readme_kernel_example_runs_on_the_gpu(tmp_path, run_cli):
    folder = tmp_path / "my_kernels"
    folder.mkdir()
    for name, body in _example_files().items():
        (folder / name).write_text(body)
    result = run_cli("measure", "--backend", "cupy", "--kernels", folder, "saxpy", "-p", "n=1000003",
                     "--min-time", "0", "--min-repeats", "3", "--format", "json")
    assert result.code == 0, result.err
    entry = json.loads(result.out)["kernels"][0]
    assert entry["status"] == "OK", entry["error"]
    assert entry["time_median"] > 0


# ---- the README's command lines that need no GPU run as written, in an 80- and a 120-column terminal ----------

GPU_COMMANDS = {"measure", "calibrate", "doctor", "sweep", "interconnect", "profile"}
_FILE = re.compile(r"\.(json|ya?ml|csv)(\.gz)?$")


def _command_lines(text: str) -> list[str]:
    """Every `roofline ...` command in a bash block (comments cut, `a && b` split), in order."""
    lines = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in re.split(r"\s+&&\s+", re.sub(r"\s+#.*$", "", line).strip()):
                if part.startswith("roofline "):
                    lines.append(part)
    return lines


def _runs_without_a_gpu(line: str) -> bool:
    import shlex

    words = shlex.split(line)
    if ">>" in words or any("$" in w for w in words) or "--device" in words:
        return False
    if words[1] in GPU_COMMANDS and not (words[1] == "measure" and "numpy" in words):
        return False
    outputs = {words[i + 1] for i, w in enumerate(words[:-1]) if w in ("-o", "--output")}
    inputs = [w for w in words[2:] if _FILE.search(w) and w not in outputs]
    return not inputs  # a file a GPU run makes first (results.json, h200-measured.yaml) is not here to read


NO_GPU_LINES = [line for line in _command_lines(TEXT) if _runs_without_a_gpu(line)]


def test_the_readme_has_a_no_gpu_walk_through():
    words = {line.split()[1] for line in NO_GPU_LINES}
    assert {"specs", "kernels", "analyze", "plot", "measure"} <= words, words


@pytest.mark.parametrize("width", [80, 120])
@pytest.mark.parametrize("line", NO_GPU_LINES)
def test_readme_command_runs_as_written(line, width, run_cli, tmp_path, monkeypatch):
    import shlex

    pytest.importorskip("matplotlib") if " plot" in line else None
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", str(width))
    r = run_cli(*shlex.split(line)[1:])
    assert r.code == 0, f"{line}: {r.err}"
    assert "Traceback" not in r.err
    if "--format" not in line:  # a table: it fits the terminal and cuts nothing
        assert all(len(out) <= width for out in r.out.splitlines()), line
        assert "…" not in r.out, line


def test_the_spec_prefixes_the_readme_names_resolve():
    from roofline.load.specs import SpecCatalog

    sentence = re.search(r"an alias or unique prefix \(([^)]*)\)", TEXT)
    assert sentence is not None
    names = re.findall(r"`([^`]+)`", sentence.group(1))
    assert len(names) >= 3
    catalog = SpecCatalog.bundled()
    for name in names:
        assert catalog.resolve(name).id  # raises on an ambiguous prefix such as a100-pcie


def test_files_the_docs_name_are_in_the_repository():
    root = README.parent
    placeholders = ("my_kernels/", "baseline/", ".github/workflows/", "gpu-l2-cache/", "measurement/")
    for doc in [README, *sorted((root / "docs").glob("*.md"))]:
        text = doc.read_text(encoding="utf-8")
        for path in set(re.findall(r"(?<![\w./-])((?:[\w.-]+/)+[\w.-]+\.(?:py|ya?ml|json|md|cu|csv|txt|png|html))",
                                   text)):
            if path.startswith(placeholders):
                continue
            assert (root / path).exists() or (doc.parent / path).exists(), f"{doc.name} names {path}"


def test_format_help_lists_only_the_formats_a_command_takes(run_cli):
    r = run_cli("specs", "--help")
    assert r.code == 0
    assert "csv" not in r.out and "markdown" not in r.out


@pytest.mark.parametrize("name", cli.list_commands(click.Context(cli)))
def test_help_shows_percent_signs_once(name, run_cli):
    """click does not %-format help text: '%%' would be shown as written."""
    r = run_cli(name, "--help")
    assert r.code == 0
    assert "%%" not in r.out


# ---- what the README shows is what the tool prints now, numbers included (issue 31, "Honest output") ----------


def _console_blocks(text: str) -> list[tuple[str, list[str]]]:
    """Each ```console block: its `$ roofline ...` command and the lines shown under it."""
    blocks = []
    for block in re.findall(r"```console\n(.*?)```", text, re.S):
        first, *shown = block.rstrip("\n").split("\n")
        assert first.startswith("$ roofline "), first
        blocks.append((first[2:], shown))
    return blocks


def test_the_readme_shows_an_output_block():
    assert _console_blocks(TEXT), "the README shows what a command prints"


@pytest.mark.parametrize("command,shown", _console_blocks(TEXT), ids=lambda v: v if isinstance(v, str) else "")
def test_a_readme_output_block_is_what_the_command_prints(command, shown, run_cli, monkeypatch):
    """Run at 80 columns, as the README says; the lines must match but for the spaces a terminal pads with."""
    import shlex

    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli(*shlex.split(command)[1:])
    assert r.code == 0, r.err
    printed = [line.rstrip() for line in r.out.rstrip("\n").split("\n")]
    assert printed == shown, "\n".join(["README shows:", *shown, "the tool prints:", *printed])


def _commented_lines(text: str) -> list[tuple[str, str]]:
    """(command, the text a comment quotes) for each bash-block command whose comment quotes what it prints."""
    found = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            m = re.match(r"(roofline [^#]*?)\s+#.*\"([^\"]+)\"", line)
            if m and m.group(1) in NO_GPU_LINES:
                found.append((m.group(1), m.group(2)))
    return found


@pytest.mark.parametrize("command,quoted", _commented_lines(TEXT))
def test_what_a_readme_comment_quotes_is_printed(command, quoted, run_cli, monkeypatch):
    import shlex

    monkeypatch.setenv("COLUMNS", "80")
    r = run_cli(*shlex.split(command)[1:])
    assert r.code == 0, r.err
    assert quoted in r.out, (command, quoted)


def _markdown_table(text: str, header: str) -> tuple[list[str], list[list[str]]]:
    lines = text.split(header, 1)[1].splitlines()
    columns = [c.strip() for c in header.strip("|").split("|")]
    rows = []
    for line in lines[2:]:
        if not line.startswith("|"):
            break
        rows.append([c.strip() for c in line.strip().strip("|").split("|")])
    return columns, rows


def test_the_readme_profile_table_is_what_the_tool_prints_for_the_capture():
    """The GPT-2 table and program line in the README, against `import ncu --group-by op` of the committed capture
    (tests/data/ncu/h200_gpt2_profile.csv, the run docs/measurements/h200-2026-11-30-profile-gpt2.md records)."""
    from conftest import NCU
    from roofline.ncu.group import add_groups
    from roofline.ncu.importer import import_csv
    from roofline.render.tables.grouped import COLUMNS, footer, group_row

    doc, _ = import_csv(NCU / "h200_gpt2_profile.csv", "h200")
    add_groups(doc, "op")
    header = "| # | group | launches | time | share | roof | of ceiling | SOL time | recoverable | model |"
    columns, rows = _markdown_table(TEXT, header)
    assert len(rows) == 5
    for i, row in enumerate(rows):
        printed = dict(zip(COLUMNS, group_row(i + 1, doc["groups"][i])))
        for column, cell in zip(columns, row):
            assert cell == printed[column].strip(), (row[1], column, cell, printed[column])
    paragraph = " ".join(TEXT.split(header, 1)[1].split("program: ", 1)[1].split())
    assert paragraph.startswith(" ".join(footer(doc).removeprefix("program: ").split())), paragraph[:200]
