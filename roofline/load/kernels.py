"""Kernel descriptor files (kernels/*.yaml) → KernelDescriptor, and the catalogue users select from."""

from __future__ import annotations

import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable, Mapping, Sequence

from roofline.load.bundled import bundled_dir
from roofline.errors import InputError, at, closest
from roofline.model.expr import Expr, FormulaError, compile_expr
from roofline.model.types import (
    DEFAULT_PATTERN, ITEMSIZE, LINK_NAMES, NO_DTYPE, ROOF_NAMES, TRAFFIC_LEVELS, KernelDescriptor, LaunchGeometry, StageSpec,
)
from roofline.model.workload import evaluate
from roofline.load.yamlio import Fields, read_yaml_mapping
from roofline.model.geometry import MAX_LAUNCHES, launch_shapes

KERNEL_SCHEMA_VERSION = 1
_TOP_KEYS = (
    "schema_version", "name", "description", "pattern", "dtype", "params", "flops", "bytes", "stages", "roof",
    "access_bytes", "implementation", "traffic", "family", "test_params",
    "threads", "bytes_per_thread", "launches", "reductions", "interconnect", "blocks", "values",
)
_STAGE_KEYS = ("name", "flops", "bytes", "bytes_per_thread")
RESERVED_NAMES = ("itemsize",)


def _formula(f_path: Path, field: str, raw: object, allowed: Iterable[str]) -> Expr:
    try:
        expr = compile_expr(raw)
    except FormulaError as exc:
        raise at(f_path, field, str(exc)) from None
    allowed = set(allowed)
    if "itemsize" in expr.names and "itemsize" not in allowed:
        raise at(f_path, field, "uses itemsize, which needs the element type: add a dtype (e.g. 'dtype: float32')")
    for name in sorted(expr.names - allowed):
        raise at(f_path, field, f"unknown name '{name}'{closest(name, allowed)}; known: {', '.join(sorted(allowed))}")
    return expr


def load_descriptor(path: Path) -> KernelDescriptor:
    f = Fields(path, read_yaml_mapping(path))
    f.reject_unknown(_TOP_KEYS)
    f.schema_version(KERNEL_SCHEMA_VERSION, "kernel descriptor")
    name = f.string("name", required=True) or ""
    if any(c.isspace() for c in name) or "=" in name:
        raise f.error("name", f"must not contain spaces or '=', got {name!r}")
    dtype = f.string("dtype")
    if dtype is None:
        if f.has("implementation") or f.has("family"):
            raise f.error("dtype", "is required when the kernel has an implementation: measure makes its inputs "
                                   "in that element type")
        dtype = NO_DTYPE
    elif dtype not in ITEMSIZE:
        raise f.error("dtype", f"unknown dtype '{dtype}'{closest(dtype, ITEMSIZE)}; known: {', '.join(ITEMSIZE)}")
    roof = f.string("roof") or "fp32"
    if roof not in ROOF_NAMES:
        raise f.error("roof", f"unknown roof '{roof}'{closest(roof, ROOF_NAMES)}; known: {', '.join(ROOF_NAMES)}")

    reserved = RESERVED_NAMES if dtype in ITEMSIZE else ()
    params: dict[str, Expr] = {}
    p = f.mapping("params")
    if p is not None:
        for key in p.data:
            if not isinstance(key, str) or not key.isidentifier():
                raise f.error(f"params.{key}", "parameter names must be identifiers (letters, digits, _)")
            if key in RESERVED_NAMES:
                raise f.error(f"params.{key}", f"'{key}' is set from the dtype and cannot be a parameter")
            params[key] = _formula(path, f"params.{key}", p.data[key], [*params, *reserved])
    names = [*params, *reserved]

    stages: list[StageSpec] = []
    flops = bytes_ = None
    if f.has("stages"):
        if f.has("flops") or f.has("bytes"):
            raise f.error("stages", "give either stages or flops/bytes, not both")
        raw = f.data["stages"]
        if not isinstance(raw, list) or not raw:
            raise f.error("stages", "expected a non-empty list of {name, flops, bytes}")
        if len(raw) > MAX_LAUNCHES:
            raise f.error("stages", f"has {len(raw):,} stages; a descriptor describes at most {MAX_LAUNCHES:,} launches "
                                    "in series (the bundled pipelines have up to 5): describe the repeated part once "
                                    "and scale its flops and bytes")
        for i, entry in enumerate(raw):
            if not isinstance(entry, dict):
                raise f.error(f"stages[{i}]", "expected a mapping with name, flops and bytes")
            s = Fields(path, entry, f"stages[{i}].")
            s.reject_unknown(_STAGE_KEYS)
            stages.append(
                StageSpec(
                    name=s.string("name", required=True) or "",
                    flops=_formula(path, s.name("flops"), s.required("flops"), names),
                    bytes=_formula(path, s.name("bytes"), s.required("bytes"), names),
                    bytes_per_thread=(_formula(path, s.name("bytes_per_thread"), entry["bytes_per_thread"],
                                               [*names, "sm_count"]) if "bytes_per_thread" in entry else None),
                )
            )
    else:
        flops = _formula(path, "flops", f.required("flops"), names)
        bytes_ = _formula(path, "bytes", f.required("bytes"), names)

    access = _formula(path, "access_bytes", f.data["access_bytes"], names) if f.has("access_bytes") else None
    traffic = _traffic(f, names)
    links = _links(f, names)
    geometry = _geometry(f, names)
    family = _implementation_path(path, f, "family")
    implementation = _implementation_path(path, f, "implementation") or family  # a family alone implements it
    test_params = _test_params(f, params, names, implementation is not None)
    values = _values(f, params)

    descriptor = KernelDescriptor(
        name=name,
        description=f.string("description") or "",
        pattern=f.string("pattern") or DEFAULT_PATTERN,
        dtype=dtype,
        params=params,
        roof=roof,
        flops=flops,
        bytes=bytes_,
        stages=tuple(stages),
        access_bytes=access,
        implementation=implementation,
        path=path,
        traffic=traffic,
        family=family,
        test_params=test_params,
        geometry=geometry,
        interconnect=links,
        values=values,
    )
    work = evaluate(descriptor)  # the defaults must evaluate: errors surface when the file is loaded
    if geometry:
        launch_shapes(descriptor, work, sm_count=1)  # so must the launch geometry, on any GPU
    if test_params:
        try:
            evaluate(descriptor, test_params)
        except InputError as exc:
            raise f.error("test_params", f"the kernel cannot be evaluated at them: {exc}") from None
    return descriptor


def _formula_map(f: "Fields", key: str, known: Sequence[str], what: str, names: Sequence[str]) -> dict[str, Expr]:
    """`key: {name: formula}`, each name one of `known` (a `what`: parameter, level, link); {} when absent."""
    m = f.mapping(key)
    if m is None:
        return {}
    out: dict[str, Expr] = {}
    for name in m.data:
        if name not in known:
            raise f.error(f"{key}.{name}", f"unknown {what} '{name}'{closest(str(name), known)}; "
                                           f"known: {', '.join(known) or 'none'}")
        out[name] = _formula(f.path, f"{key}.{name}", m.data[name], names)
    return out


def _test_params(f: "Fields", params: Mapping[str, Expr], names: Sequence[str], runnable: bool) -> dict[str, Expr]:
    """`test_params: {n: 1001}`: sizes the GPU tests measure instead of the defaults (awkward ones: partial blocks,
    n % 4 != 0), overriding the implementation's TEST_PARAMS name by name."""
    if f.mapping("test_params") is not None and not runnable:
        raise f.error("test_params", "only a kernel with an implementation or family is measured; add one")
    return _formula_map(f, "test_params", list(params), "parameter", names)


def _values(f: "Fields", params: Mapping[str, Expr]) -> dict[str, tuple[float, ...]]:
    """`values: {batch: [1, 2, 4, 8, 16]}`: the only values a parameter may take (the implementation has code for
    no other), so a size it cannot run is refused with the inputs, before anything is launched."""
    m = f.mapping("values")
    if m is None:
        return {}
    out: dict[str, tuple[float, ...]] = {}
    for name, raw in m.data.items():
        if name not in params:
            raise f.error(f"values.{name}", f"unknown parameter '{name}'{closest(str(name), params)}; "
                                            f"known: {', '.join(params) or 'none'}")
        if (not isinstance(raw, list) or not raw
                or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in raw)):
            raise f.error(f"values.{name}", f"expected a non-empty list of numbers, got {raw!r}")
        out[name] = tuple(float(v) for v in raw)
    return out


def _traffic(f: "Fields", names: Sequence[str]) -> dict[str, Expr]:
    """`traffic: {l1: formula, l2: formula}`: the bytes the kernel requests at each cache level it names."""
    m = f.mapping("traffic")
    if m is not None and "dram" in m.data:
        raise f.error("traffic.dram", "DRAM traffic is the descriptor's 'bytes'; traffic gives the other "
                                      f"levels: {', '.join(TRAFFIC_LEVELS)}")
    return _formula_map(f, "traffic", TRAFFIC_LEVELS, "level", names)


def _links(f: "Fields", names: Sequence[str]) -> dict[str, Expr]:
    """`interconnect: {nvlink: formula}`: the bytes one GPU sends over each link (one direction; a ring sends as
    much as it receives), so `analyze` can bound the kernel by the spec's link roof as well."""
    return _formula_map(f, "interconnect", LINK_NAMES, "link", names)


def _geometry(f: "Fields", names: Sequence[str]) -> LaunchGeometry:
    """threads, blocks and bytes_per_thread (formulas that may also use sm_count), launches and reductions (whole
    numbers): how the kernel launches, for the first-principles size model (docs/kernel-interface.md)."""
    allowed = [*names, "sm_count"]
    exprs = {key: _formula(f.path, key, f.data[key], allowed) if f.has(key) else None
             for key in ("threads", "bytes_per_thread", "blocks")}
    launches = f.integer("launches") if f.has("launches") else None
    if launches is not None and not 1 <= launches <= MAX_LAUNCHES:
        raise f.error("launches", f"is {launches:,}; expected a whole number from 1 to {MAX_LAUNCHES:,} (launches in "
                                  "series)")
    if launches is not None and f.has("stages"):
        raise f.error("launches", "a pipeline launches once per stage; give launches only without stages")
    reductions = f.integer("reductions", minimum=0) if f.has("reductions") else None
    if reductions is not None and reductions > 2**20:
        raise f.error("reductions", f"is {reductions:.4g}; expected the block reductions in series, at most 2**20")
    return LaunchGeometry(launches=launches, reductions=reductions, **exprs)


def _descriptor_files(path: Path) -> list[Path]:
    if path.is_dir():
        return sorted(p for p in path.iterdir() if p.suffix in (".yaml", ".yml") and not p.name.startswith("_"))
    if path.exists():  # a file, or a FIFO or device: the reader refuses those with the reason
        return [path]
    raise InputError(f"--kernels: {path}: no such file or folder")


@dataclass(frozen=True)
class KernelCatalog:
    descriptors: tuple[KernelDescriptor, ...]

    @classmethod
    def load(cls, extra: Sequence[Path] = (), include_bundled: bool = True) -> "KernelCatalog":
        files: list[Path] = []
        if include_bundled:
            files += _descriptor_files(bundled_dir("kernels"))
        for path in extra:
            files += _descriptor_files(Path(path))
        by_name: dict[str, KernelDescriptor] = {}
        for file in files:
            d = load_descriptor(file)
            if d.name in by_name:
                raise at(file, "name", f"kernel '{d.name}' is already defined in {by_name[d.name].path}")
            by_name[d.name] = d
        return cls(tuple(by_name.values()))

    @property
    def names(self) -> list[str]:
        return [d.name for d in self.descriptors]

    def select(self, names: Sequence[str]) -> list[KernelDescriptor]:
        """Kernels by name, in the order given; all of them when no name is given."""
        if not names:
            return list(self.descriptors)
        by_name = {d.name: d for d in self.descriptors}
        out = []
        for n in names:
            if n not in by_name:
                raise InputError(
                    f"no kernel named '{n}'{closest(n, by_name)}; run 'roofline kernels' to list them"
                )
            if by_name[n] not in out:
                out.append(by_name[n])
        return out


def parse_overrides(pairs: Sequence[str], selected: Sequence[KernelDescriptor]) -> Mapping[str, Expr]:
    """-p NAME=VALUE options → formulas; a name that no selected kernel has is an error."""
    known = {name for d in selected for name in d.params}
    out: dict[str, Expr] = {}
    for pair in pairs:
        name, sep, value = pair.partition("=")
        name = name.strip()
        if not sep or not name or not value.strip():
            raise InputError(f"-p {pair}: expected NAME=VALUE, like -p n=2**20")
        if name not in known:
            hint = closest(name, known)
            raise InputError(
                f"-p {pair}: no selected kernel has a parameter '{name}'{hint}; "
                f"they have: {', '.join(sorted(known)) or 'none'}"
            )
        try:
            out[name] = compile_expr(value)
        except FormulaError as exc:
            raise InputError(f"-p {pair}: {exc}") from None
    return out


def _implementation_path(path: Path, f: "Fields", key: str) -> Path | None:
    """The file named by `key` (implementation or family) is imported (run), so it must be a .py file inside the
    descriptor's folder, links followed: a descriptor from a pull request must not make roofline execute a file
    anywhere else."""
    impl_name = f.string(key)
    if impl_name is None:
        return None
    folder = path.parent.resolve()
    candidate = Path(impl_name)
    if candidate.is_absolute():
        raise f.error(key, f"must be a file name relative to the descriptor's folder, got the absolute "
                           f"path {impl_name!r}")
    implementation = _resolved_in(folder, candidate)
    if not implementation.is_relative_to(folder):
        raise f.error(key, f"{impl_name!r} resolves to {implementation}, outside the descriptor's folder {folder}")
    if implementation.suffix != ".py" or not implementation.is_file():
        raise f.error(key, f"expected a .py file next to the descriptor, found no {implementation}")
    return implementation


def _resolved_in(folder: Path, candidate: Path) -> Path:
    """`folder / candidate` with links followed, `folder` already resolved. A bare file name that is a regular file,
    not a link, is that path as it stands, found with one lstat instead of resolve()'s walk over every component
    (each bundled descriptor names one or two: that walk was a fifth of loading the catalogue)."""
    direct = folder / candidate
    if len(candidate.parts) == 1 and candidate.name not in (".", ".."):
        try:
            if stat.S_ISREG(direct.lstat().st_mode):
                return direct
        except OSError:
            pass  # missing or unreadable: resolve() and the caller's checks say which
    return direct.resolve()
