"""Machine spec files (specs/*.yaml) → MachineSpec, and finding a spec by id, alias, prefix or path."""

from __future__ import annotations

from pathlib import Path
from typing import Iterable

from roofline.load.bundled import bundled_dir
from roofline.errors import InputError, at, closest
from roofline.model.invariants import PLAUSIBLE, hard_violations
from roofline.model.types import CACHE_LEVELS, ENERGY_INPUTS, ENERGY_MEMORY_LEVELS, LINK_NAMES, ROOF_NAMES, CacheLevel
from roofline.model.types import EnergySpec, Link, MachineSpec, ModelFigures, Source
from roofline.load.yamlio import Fields, read_yaml_mapping
from roofline.model.units import format_rate, format_time

SPEC_SCHEMA_VERSION = 1
DEFAULT_SPEC = "h100-sxm"

_TOP_KEYS = (
    "schema_version", "id", "name", "aliases", "device_names", "architecture", "compute_capability", "memory",
    "compute", "sm_count", "max_threads_per_sm", "clocks", "caches", "notes", "sources", "measured", "derived",
    "measurement", "interconnect", "model", "energy", "power_limit",
)
_MEMORY_KEYS = ("bandwidth", "latency", "capacity", "bus_width", "clock")
_CACHE_KEYS = ("size", "bandwidth", "latency", "curve")
_CLOCK_KEYS = ("boost", "tensor", "base", "memory")
_MEASUREMENT_KEYS = ("device", "date", "tool_version", "method")
_LINK_KEYS = ("bandwidth", "links")
# The size model's machine figures (roofline.sizes.predict), each with the range a real GPU's figure falls in: a
# value outside is a typo in its unit (500 s for 500 ns), refused with the field named.
MODEL_RANGES = {
    "launch_floor": ("time", 50e-9, 1e-3),
    "round_trip": ("time", 10e-9, 1e-3),
    "reduction": ("time", 1e-9, 100e-6),
    "sm_bandwidth": ("bandwidth", 100e6, 1e12),
    "block_interval": ("time", 1e-9, 10e-6),
}
# How far a measured curve's point may fall below an earlier one before it is a slip, not noise: the H200's per-SM
# curve reads 3.984 TB/s at 128 SMs and 3.98 at 132 (0.1 % apart, one measurement's noise); a calibration's plateau
# may wander a few per cent from run to run, and calibrate writes what it measured.
CURVE_NOISE = 0.05
_ENERGY_KEYS = ("idle_power", "memory", "compute", "source", "inputs", "dram_bandwidth")


def load_spec(path: Path) -> MachineSpec:
    f = Fields(path, read_yaml_mapping(path))
    f.reject_unknown(_TOP_KEYS)
    f.schema_version(SPEC_SCHEMA_VERSION, "spec")
    spec_id = f.string("id", required=True)
    assert spec_id is not None
    if spec_id != spec_id.lower() or " " in spec_id:
        raise f.error("id", f"must be lowercase without spaces (like 'h100-sxm'), got {spec_id!r}")

    memory = f.mapping("memory", required=True)
    assert memory is not None
    memory.reject_unknown(_MEMORY_KEYS)
    compute = f.mapping("compute", required=True)
    assert compute is not None
    compute.reject_unknown(ROOF_NAMES)
    roofs = {name: compute.quantity(name, "flops") for name in compute.data}
    roofs = {k: v for k, v in roofs.items() if v is not None}
    if not roofs:
        raise f.error("compute", f"needs at least one roof (one of {', '.join(ROOF_NAMES)})")

    caches: dict[str, CacheLevel] = {}
    cache_fields = f.mapping("caches")
    if cache_fields is not None:
        cache_fields.reject_unknown(CACHE_LEVELS)
        for level in cache_fields.data:
            c = cache_fields.mapping(level, required=True)
            assert c is not None
            c.reject_unknown(_CACHE_KEYS)
            caches[level] = CacheLevel(
                size=c.quantity("size", "bytes"),
                bandwidth=c.quantity("bandwidth", "bandwidth"),
                latency=c.quantity("latency", "time"),
                curve=_curve(c),
            )

    clocks: dict[str, float] = {}
    clock_fields = f.mapping("clocks")
    if clock_fields is not None:
        clock_fields.reject_unknown(_CLOCK_KEYS)
        clocks = {k: v for k in clock_fields.data if (v := clock_fields.quantity(k, "frequency")) is not None}

    measurement: dict[str, str] = {}
    m = f.mapping("measurement")
    if m is not None:
        m.reject_unknown(_MEASUREMENT_KEYS)
        measurement = {k: str(m.data[k]) for k in m.data}

    spec = MachineSpec(
        id=spec_id,
        name=f.string("name", required=True) or spec_id,
        bandwidth=memory.quantity("bandwidth", "bandwidth", required=True) or 0.0,
        latency=memory.quantity("latency", "time", required=True) or 0.0,
        capacity=memory.quantity("capacity", "bytes"),
        roofs=roofs,
        sm_count=f.integer("sm_count"),
        max_threads_per_sm=f.integer("max_threads_per_sm"),
        caches=caches,
        clocks=clocks,
        aliases=tuple(a.lower() for a in f.string_list("aliases")),
        device_names=f.string_list("device_names"),
        architecture=f.string("architecture"),
        compute_capability=_compute_capability(f),
        notes=f.string("notes"),
        sources=_sources(f),
        measured=f.boolean("measured"),
        derived=f.boolean("derived"),
        measurement=measurement,
        path=path,
        interconnect=_interconnect(f),
        energy=_energy(f, roofs),
        power_limit=f.quantity("power_limit", "power"),
        # They document how the bandwidth was derived; the model does not use them, the invariants check them.
        memory_bus_width=memory.integer("bus_width"),
        memory_clock=memory.quantity("clock", "frequency"),
        model=_model(f, f.integer("sm_count"), memory.quantity("bandwidth", "bandwidth", required=True) or 0.0),
    )
    _refuse_impossible(spec, path)
    return spec


def _refuse_impossible(spec: MachineSpec, path: Path) -> None:
    """A spec no GPU can have is an input error naming the file and the field (roofline.model.invariants); the first hard
    violation is the message, the fields of any others are listed after it."""
    hard = hard_violations(spec)
    if not hard:
        return
    first = hard[0]
    others = list(dict.fromkeys(v.field for v in hard[1:]))
    also = f" (also impossible: {', '.join(others)})" if others else ""
    raise InputError(f"{path}: {first.field}: {first.message}{also}", fix=first.fix)


def _curve(c: Fields) -> tuple[tuple[float, float], ...]:
    """A cache level's measured bandwidth curve: a list of {working_set: 4 MiB, bandwidth: 10.7 TB/s} by strictly
    increasing working set (what calibrate writes for the L2)."""
    if not c.has("curve"):
        return ()
    raw = c.data["curve"]
    if not isinstance(raw, list) or not raw:
        raise c.error("curve", "expected a non-empty list of {working_set, bandwidth} points")
    points = []
    for i, item in enumerate(raw):
        if not isinstance(item, dict):
            raise c.error(f"curve[{i}]", "expected a mapping {working_set: SIZE, bandwidth: RATE}")
        point = Fields(c.path, item, f"{c.name('curve')}[{i}].")
        point.reject_unknown(("working_set", "bandwidth"))
        size = point.quantity("working_set", "bytes", required=True)
        bw = point.quantity("bandwidth", "bandwidth", required=True)
        if points and size <= points[-1][0]:
            raise point.error("working_set", "the curve's working sets must increase")
        top = PLAUSIBLE["cache_bandwidth"].high  # the top of its scalar figure's range; a small working set's point
        if bw > top:  # may sit far below the plateau (the launch's own time dominates), so no floor is applied
            raise point.error("bandwidth", f"{format_rate(bw)} is above {format_rate(top)}, the most a cache "
                                           "delivers (about 37 TB/s on a B200's L1, all SMs); check the unit")
        points.append((size, bw))
    return tuple(points)


def _model(f: Fields, sm_count: int | None, bandwidth: float) -> ModelFigures:
    """model: {launch_floor: 0.5 us, round_trip: 0.84 us, reduction: 211 ns, sm_bandwidth: 60 GB/s, sm_curve: [{sms: 1,
    bandwidth: 60 GB/s}, …]}: the size model's machine figures, each optional, units required, each held to the range
    a real GPU's falls in."""
    block = f.mapping("model")
    if block is None:
        return ModelFigures()
    block.reject_unknown((*MODEL_RANGES, "sm_curve"))
    values: dict[str, float | None] = {}
    for key, (kind, low, high) in MODEL_RANGES.items():
        value = block.quantity(key, kind)
        if value is not None and not low <= value <= high:
            fmt = format_time if kind == "time" else format_rate
            raise block.error(key, f"{fmt(value)} is outside what a GPU has ({fmt(low)} to {fmt(high)}); check the "
                                   "unit")
        values[key] = value
    sm_bw = values["sm_bandwidth"]
    if sm_bw is not None and bandwidth and sm_bw > bandwidth:
        raise block.error("sm_bandwidth", f"{format_rate(sm_bw)} is more than the whole GPU's memory.bandwidth "
                                          f"({format_rate(bandwidth)}); one SM cannot stream faster than all of them")
    curve: list[tuple[int, float]] = []
    if block.has("sm_curve"):
        raw = block.data["sm_curve"]
        if not isinstance(raw, list) or not raw:
            raise block.error("sm_curve", "expected a non-empty list of {sms, bandwidth} points")
        for i, item in enumerate(raw):
            if not isinstance(item, dict):
                raise block.error(f"sm_curve[{i}]", "expected a mapping {sms: COUNT, bandwidth: RATE}")
            point = Fields(block.path, item, f"{block.name('sm_curve')}[{i}].")
            point.reject_unknown(("sms", "bandwidth"))
            sms = point.integer("sms")
            if sms is None:
                raise point.error("sms", "is required")
            bw = point.quantity("bandwidth", "bandwidth", required=True) or 0.0
            if curve and sms <= curve[-1][0]:
                raise point.error("sms", "the curve's SM counts must increase")
            if sm_count and sms > sm_count:
                raise point.error("sms", f"is {sms}, more than the spec's sm_count ({sm_count})")
            if bandwidth and bw > 1.5 * bandwidth:
                raise point.error("bandwidth", f"{format_rate(bw)} is over 1.5 × memory.bandwidth "
                                               f"({format_rate(bandwidth)}): a DRAM stream cannot reach it")
            best = max((b for _, b in curve), default=0.0)
            if bw < best * (1 - CURVE_NOISE):
                raise point.error("bandwidth", f"{format_rate(bw)} at {sms} SMs is below {format_rate(best)} at fewer "
                                               "SMs: adding SMs never loses bandwidth (the curve is non-decreasing, "
                                               f"within {CURVE_NOISE:.0%} of noise); check the points' order and units")
            if sms == 1 and sm_bw is not None and abs(bw - sm_bw) > 0.1 * sm_bw:
                raise point.error("bandwidth", f"{format_rate(bw)} at 1 SM contradicts model.sm_bandwidth "
                                               f"({format_rate(sm_bw)}): both are one SM streaming alone")
            if sm_bw is not None and bw > sms * sm_bw * 1.25:  # 25 %: the single-SM figure is itself one probe
                raise point.error("bandwidth", f"{format_rate(bw)} at {sms} SMs is more than {sms} × model.sm_bandwidth "
                                               f"({format_rate(sm_bw)} per SM): k SMs stream at most k times one SM")
            curve.append((sms, bw))
    return ModelFigures(launch_floor=values["launch_floor"], round_trip=values["round_trip"],
                        reduction=values["reduction"], sm_bandwidth=sm_bw, sm_curve=tuple(curve),
                        block_interval=values["block_interval"])


def _interconnect(f: Fields) -> dict[str, Link]:
    """interconnect: {nvlink: {bandwidth: 900 GB/s, links: 18}, pcie: {bandwidth: 128 GB/s, links: 16}}; the
    bandwidth is the datasheet's, both directions summed."""
    block = f.mapping("interconnect")
    if block is None:
        return {}
    block.reject_unknown(LINK_NAMES)
    out = {}
    for name in block.data:
        link = block.mapping(name, required=True)
        assert link is not None
        link.reject_unknown(_LINK_KEYS)
        out[name] = Link(bandwidth=link.quantity("bandwidth", "bandwidth", required=True) or 0.0,
                         links=link.integer("links"))
    return out


def _energy(f: Fields, roofs: dict[str, float]) -> EnergySpec | None:
    """energy: {idle_power: 101 W, memory: {dram: 138 pJ/B}, compute: {fp16_tensor: 1.07 pJ/FLOP}, source: ...,
    inputs: random}; every figure with its unit, each compute key a roof this spec has (docs/energy.md)."""
    block = f.mapping("energy")
    if block is None:
        return None
    block.reject_unknown(_ENERGY_KEYS)
    idle = block.quantity("idle_power", "power", required=True) or 0.0
    memory = block.mapping("memory", required=True)
    assert memory is not None
    memory.reject_unknown(ENERGY_MEMORY_LEVELS)
    per_byte = {"dram": memory.quantity("dram", "energy_per_byte", required=True) or 0.0}
    if (l2 := memory.quantity("l2", "energy_per_byte")) is not None:
        per_byte["l2"] = l2
    compute = block.mapping("compute", required=True)
    assert compute is not None
    compute.reject_unknown(ROOF_NAMES)
    per_flop: dict[str, float] = {}
    for roof in compute.data:
        if roof not in roofs:
            raise compute.error(roof, f"this spec has no {roof} roof (it has {', '.join(roofs)}); an energy per FLOP "
                                      "needs the roof it belongs to")
        if (value := compute.quantity(roof, "energy_per_flop")) is not None:
            per_flop[roof] = value
    if not per_flop:
        raise block.error("compute", f"needs at least one roof's energy per FLOP (one of {', '.join(roofs)})")
    inputs = block.string("inputs", required=True)
    if inputs not in ENERGY_INPUTS:
        raise block.error("inputs", f"is {inputs!r:.40}; expected one of {', '.join(ENERGY_INPUTS)} (what data the "
                                    "figures were measured on: power depends on it)")
    return EnergySpec(idle_power=idle, memory=per_byte, compute=per_flop,
                      source=block.string("source", required=True) or "", inputs=inputs or "",
                      dram_bandwidth=block.quantity("dram_bandwidth", "bandwidth"))


def _compute_capability(f: Fields) -> str | None:
    if not f.has("compute_capability"):
        return None
    value = f.data["compute_capability"]
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return str(value)
    return f.string("compute_capability")


def _sources(f: Fields) -> tuple[Source, ...]:
    if not f.has("sources"):
        return ()
    raw = f.data["sources"]
    if not isinstance(raw, list):
        raise f.error("sources", "expected a list of {cite, for} entries or strings")
    out = []
    for i, entry in enumerate(raw):
        if isinstance(entry, str) and entry.strip():
            out.append(Source(cite=entry.strip(), fields=()))
            continue
        if not isinstance(entry, dict):
            raise f.error(f"sources[{i}]", "expected a string or a mapping with 'cite' and 'for'")
        e = Fields(f.path, entry, f"sources[{i}].")
        e.reject_unknown(("cite", "for"))
        out.append(Source(cite=e.string("cite", required=True) or "", fields=e.string_list("for")))
    return tuple(out)


class SpecCatalog:
    """The bundled specs (and any a user adds by path), looked up by id, alias or unique prefix.

    Loaded lazily: `analyze --spec h100-sxm` reads only h100-sxm.yaml (a bundled file is named after its id, and
    the tests check that ids and aliases are unique, so the full catalogue would answer the same); listing,
    aliases, prefixes and device matching load every file once.
    """

    def __init__(self, paths: Iterable[Path]):
        self._paths = tuple(paths)
        self._loaded: dict[Path, MachineSpec] = {}
        self._specs: tuple[MachineSpec, ...] | None = None

    @classmethod
    def bundled(cls) -> "SpecCatalog":
        return cls(sorted(bundled_dir("specs").glob("*.yaml")))

    @classmethod
    def from_paths(cls, paths: Iterable[Path]) -> "SpecCatalog":
        """A catalogue loaded and checked now, so a bad or clashing file is reported at once."""
        catalog = cls(paths)
        catalog.specs  # noqa: B018 - loads and checks
        return catalog

    def _load(self, path: Path) -> MachineSpec:
        if path not in self._loaded:
            self._loaded[path] = load_spec(path)
        return self._loaded[path]

    @property
    def specs(self) -> tuple[MachineSpec, ...]:
        if self._specs is None:
            specs = [self._load(p) for p in self._paths]
            seen: dict[str, Path | None] = {}
            for spec in specs:
                for key in dict.fromkeys((spec.id, *spec.aliases)):  # an alias may repeat its own id
                    if key in seen:
                        field = "id" if key == spec.id else "aliases"
                        raise at(spec.path, field, f"'{key}' is also used by {seen[key]}")
                    seen[key] = spec.path
            self._specs = tuple(specs)
        return self._specs

    @property
    def ids(self) -> list[str]:
        return [s.id for s in self.specs]

    def resolve(self, name: str) -> MachineSpec:
        """An id ('h100-sxm'), alias ('h100'), unique id prefix ('a100-pcie'), or a path to a YAML file."""
        key = name.strip().lower()
        if not key:  # a prefix of every id: 'matches several specs' would send the user looking for the wrong fault
            raise InputError(f"--spec: {name!r} is empty; give a spec id (see 'roofline specs') or a YAML path")
        if self._specs is None:
            named = [p for p in self._paths if p.stem == key]
            if len(named) == 1 and (spec := self._load(named[0])).id == key:
                return spec
        for spec in self.specs:
            if key == spec.id or key in spec.aliases:
                return spec
        candidate = Path(name).expanduser()
        if name.endswith((".yaml", ".yml")) or "/" in name or _is_file(candidate):
            return load_spec(candidate)
        matches = [s for s in self.specs if s.id.startswith(key)]
        if len(matches) == 1:
            return matches[0]
        if len(matches) > 1:
            options = ", ".join(s.id for s in matches)
            raise InputError(f"--spec: '{name}' matches several specs ({options}); give the full id")
        names = [s.id for s in self.specs] + [a for s in self.specs for a in s.aliases]
        raise InputError(
            f"--spec: no spec named '{name if len(name) <= 60 else name[:57] + '...'}'{closest(key, names)}; "
            "run 'roofline specs' to list them, "
            "or give a path to a YAML file"
        )

    def match_device(self, device_name: str) -> MachineSpec | None:
        """The spec whose device_names lists this CUDA device name exactly, if any."""
        for spec in self.specs:
            if device_name in spec.device_names:
                return spec
        return None


def _is_file(path: Path) -> bool:
    """Path.is_file, but False for a name the OS refuses (too long, a NUL byte) instead of an exception."""
    try:
        return path.is_file()
    except (OSError, ValueError):
        return False
