"""`import ncu` reads a capture line by line and keeps only what a launch needs (issue 23: a 200 MB CSV took 11 GB
and wrote a 1.6 GB JSON that `report` refused). Memory grows with the launches, not with the file; past the
launches one results file holds, the import is refused while reading; what is written is what `report` reads."""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest

from roofline.errors import InputError
from roofline.ncu.importer import import_csv
from roofline.ncu.table import parse_csv, parse_csv_file
from conftest import NCU

GPT2 = NCU / "h200_gpt2_profile.csv"


def gpt2_capture(path: Path, launches: int, noise_lines: int = 0) -> Path:
    """A capture of `launches` launches: the GPT-2 capture's rows again and again under fresh IDs, after
    `noise_lines` lines of the program's own output (1 KiB each)."""
    lines = GPT2.read_text(encoding="utf-8").split("\n")
    at = next(i for i, line in enumerate(lines) if line.startswith('"ID"'))
    rows = [line for line in lines[at + 2:] if line.startswith('"') and line[1:2].isdigit()]
    with path.open("w", encoding="utf-8") as f:
        for n in range(noise_lines):
            f.write(f"step {n} " + "x" * 1014 + "\n")
        f.write(lines[at] + "\n" + lines[at + 1] + "\n")
        for i in range(launches):
            row = rows[i % len(rows)]
            f.write(f'"{i}"' + row[row.index(","):] + "\n")
    return path


def peak_of(call):  # type: ignore[no-untyped-def]
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_the_file_is_read_line_by_line(tmp_path: Path) -> None:
    """96 MiB of the program's output around 2,000 launches: what is held is the launches, never the file (read
    whole, its text and its lines alone were over 200 MiB)."""
    path = gpt2_capture(tmp_path / "noisy.csv", 2000, noise_lines=96 * 1024)
    table, peak = peak_of(lambda: parse_csv_file(path))
    assert len(table.launches) == 2000 and table.noise_lines == 96 * 1024
    assert peak < 24 << 20, f"peak {peak / 2**20:.0f} MiB"


def test_import_memory_grows_with_launches_not_more(tmp_path: Path) -> None:
    """5,000 launches and 32 MiB of program output: the whole import, every entry made, stays under 10 KiB a
    launch (the file whole, its lines and its cells were held before: over 100 MiB)."""
    path = gpt2_capture(tmp_path / "big.csv", 5_000, noise_lines=32 * 1024)
    (doc, _), peak = peak_of(lambda: import_csv(path, "h200"))
    assert len(doc["kernels"]) == 5_000
    assert peak < 5_000 * 10 << 10, f"peak {peak / 2**20:.0f} MiB"


def test_launches_share_their_units() -> None:
    """Each launch used to carry its own copy of the units row: one dict per header now."""
    table = parse_csv(GPT2.read_text(encoding="utf-8"))
    assert len({id(launch.units) for launch in table.launches}) == 1


def test_the_same_table_from_text_and_from_the_file(tmp_path: Path) -> None:
    for path in sorted(NCU.glob("*.csv")):
        text = path.read_text(encoding="utf-8")
        try:
            a = parse_csv(text)
        except Exception as exc:  # noqa: BLE001 - the file reader must refuse it the same way
            with pytest.raises(type(exc)):
                parse_csv_file(path)
            continue
        b = parse_csv_file(path)
        assert [(x.id, x.kernel, x.info, x.metrics, x.raw, x.line) for x in a.launches] == \
               [(x.id, x.kernel, x.info, x.metrics, x.raw, x.line) for x in b.launches], path
        assert (a.columns, a.noise_lines, a.dropped) == (b.columns, b.noise_lines, b.dropped), path


def test_more_launches_than_a_results_file_holds_is_refused_while_reading(tmp_path: Path,
                                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("roofline.ncu.table.MAX_LAUNCHES", 1000)
    path = gpt2_capture(tmp_path / "many.csv", 1500)
    with pytest.raises(InputError, match=r"many.csv: more than 1,000 kernel launches \(line 1003\).*--launch-count"):
        import_csv(path, "h200")


def test_results_larger_than_report_reads_are_refused_not_written(run_cli, tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """The writer keeps report's limit: a file it would refuse is not written."""
    monkeypatch.setattr("roofline.records.files.MAX_RESULTS_BYTES", 200_000)
    path, out = gpt2_capture(tmp_path / "c.csv", 235), tmp_path / "o.json"
    code, stdout, err = run_cli("import", "ncu", path, "--spec", "h200", "-o", out)
    assert code == 2 and "more than the 0.191 MiB 'report' and 'plot' read" in err and "nothing was written" in err
    assert not out.exists() and "Traceback" not in err
    monkeypatch.undo()
    code, _, err = run_cli("import", "ncu", path, "--spec", "h200", "-o", out)
    assert code in (0, None), err
    code, _, err = run_cli("report", out)
    assert code in (0, None), err
    assert len(json.loads(out.read_text())["kernels"]) == 235
