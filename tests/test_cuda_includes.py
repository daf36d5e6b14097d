"""A kernel folder's own headers are expanded into the CUDA source before NVRTC, so CuPy's compile cache (keyed on
the source text) sees an edited header; other includes are left to NVRTC."""

from __future__ import annotations

from pathlib import Path

import pytest

from roofline.measurement.cuda_includes import expand_includes

ROOT = Path(__file__).resolve().parent.parent


def _expand(tmp_path: Path, code: str) -> str:
    return expand_includes(code, tmp_path, Path.read_text)


def test_a_local_header_is_replaced_by_its_text_and_an_edit_changes_the_source(tmp_path):
    (tmp_path / "h.cuh").write_text("#define A 1\n")
    before = _expand(tmp_path, '#include "h.cuh"\nint x = A;\n')
    assert "#define A 1" in before and '#include "h.cuh"' not in before
    (tmp_path / "h.cuh").write_text("#define A 2\n")
    assert _expand(tmp_path, '#include "h.cuh"\nint x = A;\n') != before  # a new cache key for CuPy


def test_nested_headers_expand_once_each(tmp_path):
    (tmp_path / "a.cuh").write_text('#include "b.cuh"\nint a;\n')
    (tmp_path / "b.cuh").write_text("int b;\n")
    out = _expand(tmp_path, '#include "a.cuh"\n#include "b.cuh"\n')
    assert out.count("int b;") == 1 and "int a;" in out and "b.cuh: already included" in out


def test_a_header_that_includes_itself_is_expanded_once(tmp_path):
    (tmp_path / "loop.cuh").write_text('#include "loop.cuh"\nint once;\n')
    assert _expand(tmp_path, '#include "loop.cuh"\n').count("int once;") == 1


@pytest.mark.parametrize("line", [
    "#include <cuda_fp16.h>",          # system headers go to NVRTC
    '#include "missing.cuh"',          # not in the folder: NVRTC reports it
    '#include "../outside.cuh"',       # outside the kernel's folder
    '#include "sub/inner.cuh"',        # only the folder itself
])
def test_other_includes_are_left_to_nvrtc(tmp_path, line):
    (tmp_path.parent / "outside.cuh").write_text("int outside;\n")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "inner.cuh").write_text("int inner;\n")
    assert _expand(tmp_path, line + "\n") == line + "\n"


def test_nesting_deeper_than_the_limit_is_refused(tmp_path):
    for i in range(12):
        (tmp_path / f"h{i}.cuh").write_text(f'#include "h{i + 1}.cuh"\n')
    (tmp_path / "h12.cuh").write_text("int deep;\n")
    with pytest.raises(ValueError, match="nested more than"):
        _expand(tmp_path, '#include "h0.cuh"\n')


def test_the_bundled_sgemm_gets_its_cp_async_helpers_from_one_header():
    code = expand_includes((ROOT / "kernels" / "matmul.cu").read_text(), ROOT / "kernels", Path.read_text)
    assert not [line for line in code.splitlines() if line.lstrip().startswith('#include "')]
    assert code.count("void cp_async16(") == 1
