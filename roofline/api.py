"""Any callable on the roofline: `roofline.measure(fn, ...)` times a user's own GPU work (PyTorch, CuPy, Triton,
Numba, a RawKernel) with the protocol `roofline measure` uses, and places it against its ceiling.

The harness is shared: the backends time the runs (warm-up, CUDA-graph replay when capture works, events
otherwise, at least min_time and min_repeats, the GPU's clocks over the window) and harness.timed_result turns
them into a KernelResult. What is ours here is only what a callable needs: a model given inline or by descriptor,
verification by `check=` or `reference=`, and the stream the work must run on.
"""

from __future__ import annotations

import functools
import math
import sys
import warnings
from dataclasses import fields as dataclass_fields, replace
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence
import numbers

from roofline.records.caveats import warning
from roofline.errors import API_WORDS, InputError, RooflineError, first_line, in_api_words, reworded
from roofline.measurement.policy import MeasurePolicy, buffer_sets
from roofline.model.types import ITEMSIZE, MachineSpec, Workload
from roofline.records.document import KernelResult, ResultsDocument, Status
from roofline.load.specs import SpecCatalog
from roofline.model.analysis import analyze as analyze_on
from roofline.load.selection import resolve_specs, load_selection
from roofline.records.schema import kernel_identity
from roofline.model.workload import evaluate
from roofline.model.counts import counted


BACKENDS = ("auto", "cupy", "numpy")


def speaks_api(fn: Callable[..., Any] | None = None, **renamed: str) -> Any:
    """The library's messages name command-line options; a caller of the API is told the keyword instead
    (`--backend numpy` -> `backend="numpy"`, roofline.errors.in_api_words), in the same error type. `renamed`:
    a function whose keyword for a concept is spelled otherwise (roofline.backend(name=...))."""
    words = {option: renamed.get(keyword, keyword) for option, keyword in API_WORDS.items()}

    def decorate(f: Callable[..., Any]) -> Callable[..., Any]:
        @functools.wraps(f)
        def call(*args: Any, **kwargs: Any) -> Any:
            try:
                return f(*args, **kwargs)
            except RooflineError as exc:
                raise reworded(exc, lambda text: in_api_words(text, words)) from None

        return call

    return decorate if fn is None else decorate(fn)


class Result(KernelResult):
    """What roofline.measure and roofline.analyze return: the typed result (roofline.records.document.KernelResult) plus
    show(). The API is a public face above the renderers, so it may print; the row itself is drawn in render/."""

    def show(self) -> None:
        """Print this result as the row `roofline measure` prints."""
        from roofline.render.tables.measure import show  # rich and the table code load at the first print

        show(self)


def _as_result(kernel: KernelResult) -> Result:
    return Result(**{f.name: getattr(kernel, f.name) for f in dataclass_fields(kernel)})


_BACKENDS: dict[tuple[str, int], Any] = {}  # opening one compiles a kernel and reads NVML: once per process
_MACHINES: dict[tuple[str, int, str], MachineSpec | None] = {}


@speaks_api(backend="name")
def backend(name: str = "auto", device: int = 0) -> Any:
    """The process's backend: 'auto' or 'cupy' is the GPU (BackendUnavailable without one), 'numpy' the host."""
    from roofline.measurement.session import open_backend  # lazy: roofline.measurement.session imports numpy (start-up)

    if name not in BACKENDS:
        raise InputError(f"backend {_short(name)}: expected one of {', '.join(map(repr, BACKENDS))}")
    if isinstance(device, bool) or not isinstance(device, numbers.Integral) or device < 0:
        raise InputError(f"device={_short(device)}: expected a CUDA device ordinal (0, 1, ...)")
    device = int(device)  # a NumPy integer too
    key = ("cupy" if name == "auto" else name, device)
    if key not in _BACKENDS:
        _BACKENDS[key] = open_backend(key[0], device)
    return _BACKENDS[key]


_open_backend = backend.__wrapped__  # for the functions whose backend= argument hides the name (their own words)


def _backend_argument(backend: str | None, backend_name: str | None, default: str | None) -> str | None:
    """backend=, with backend_name= (its old spelling, deprecated) still taken for one release."""
    if backend_name is None:
        return default if backend is None else backend
    warnings.warn("backend_name= is deprecated and will be removed in the next release; use backend= (as the CLI's "
                  "--backend)", DeprecationWarning, stacklevel=3)
    if backend is not None and backend != backend_name:
        raise InputError(f"backend={backend!r} and backend_name={backend_name!r} disagree: give backend= only")
    return backend_name


def _machine(spec: str | None, engine: Any) -> MachineSpec | None:
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine
    key = (engine.name, getattr(engine, "device_id", 0), spec or "auto")
    if key not in _MACHINES:
        _MACHINES[key] = choose_machine(spec, engine, SpecCatalog.bundled())
    return _MACHINES[key]


@speaks_api
def workload(name: str | None = None, *, flops: float | None = None, bytes: float | None = None,
             descriptor: str | None = None, params: Mapping[str, Any] | None = None,
             kernels: Sequence[str | Path] = (), roof: str = "fp32", dtype: str = "float32") -> Workload:
    """The model of the work: FLOPs and DRAM bytes given inline, or a descriptor (bundled or from `kernels`) at
    `params`, so the API and the CLI count the same way."""
    if descriptor is not None:
        if flops is not None or bytes is not None:
            raise InputError("give either descriptor= or flops= and bytes=, not both")

        overrides = [f"{k}={v}" for k, v in (params or {}).items()]
        (d,), parsed = load_selection([descriptor], [Path(p) for p in kernels], overrides)
        work = evaluate(d, parsed)
        return work if name is None else replace(work, name=name)
    if flops is None or bytes is None:
        raise InputError("roofline.measure needs flops= and bytes= (the work the model counts), or descriptor=")
    flops, bytes = _count("flops", flops), _count("bytes", bytes)
    if bytes <= 0:
        raise InputError("bytes=0: a kernel moves at least one byte")
    if dtype not in ITEMSIZE:
        raise InputError(f"dtype={dtype!r}: expected one of {', '.join(ITEMSIZE)}")
    return Workload(name=name or "callable", pattern="custom", dtype=dtype, roof=roof, params=dict(params or {}),
                    flops=flops, bytes=bytes, access_bytes=float(ITEMSIZE[dtype]))


def _count(what: str, value: Any) -> float:
    """A FLOP or byte count as a float: any real number (int, float, NumPy's integer and float scalars, a 0-d
    array of one), finite, 0 or more; an InputError naming the argument otherwise (10**400 overflows a float)."""
    if getattr(value, "shape", None) == () and hasattr(value, "item"):
        value = value.item()  # a 0-d array, or a NumPy scalar: its Python number
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InputError(f"{what}={_short(value)}: expected a finite count of 0 or more (a number, not "
                         f"{type(value).__name__})")
    try:
        number = float(value)
    except (OverflowError, ValueError, TypeError):
        number = math.inf
    if not 0 <= number < math.inf:
        raise InputError(f"{what}={_short(value)}: expected a finite count of 0 or more"
                         + (" (too large for a float)" if isinstance(value, int) and number == math.inf else ""))
    return number


def _spec_name(spec: Any, default: str) -> str:
    """spec= as given (None: the default); an InputError for anything but a name or a path."""
    if spec is None:
        return default
    if isinstance(spec, Path):
        return str(spec)
    if not isinstance(spec, str) or not spec.strip():
        raise InputError(f"spec={_short(spec)}: expected a spec name (a bundled id or alias, or a YAML path)")
    return spec


@speaks_api
def analyze(name: str | None = None, *, spec: str | None = "auto", **model: Any) -> Result:
    """The analysis alone (no run): the same fields `roofline analyze --format json` gives, as a KernelResult.
    spec='auto' (or None), as in `roofline analyze`: the GPU's own spec when the driver lists one, otherwise
    h100-sxm."""
    work = workload(name, **model)
    fields = analyze_on(resolve_specs([_spec_name(spec, "auto")])[0], work).to_dict()
    return Result.from_fields({**fields, "status": Status.SKIPPED, "verified": None,
                               "error": "analysis only: not run"})


@speaks_api
def measure(fn: Callable[..., Any], *, name: str | None = None, flops: float | None = None,
            bytes: float | None = None, descriptor: str | None = None, params: Mapping[str, Any] | None = None,
            kernels: Sequence[str | Path] = (), roof: str = "fp32", dtype: str = "float32", spec: str | None = "auto",
            inputs: Callable[[], Any] | None = None, check: Callable[[], Any] | None = None,
            reference: Any = None, rtol: float = 1e-5, atol: float = 1e-6, min_time: float = 0.5,
            min_repeats: int = 10, backend: str | None = None, device: int = 0,
            backend_name: str | None = None) -> Result:
    """Verify, then time, `fn` on the GPU (or, with backend='numpy', on the host by wall clock).

    `fn` enqueues its work on the current stream, which the API chooses and makes current for CuPy and PyTorch.
    `inputs` returns a fresh argument set (a dict of keyword arguments or a tuple of positional ones); with it the
    API rotates among copies when they fit in 4 x L2, so repeats are not cache hits. `check()` returns True (or
    raises) once the first run finished; `reference` is compared with what `fn` returns. Without either the result
    is unverified, and `roofline report` fails it as such. (`backend_name=` is the deprecated spelling of
    `backend=`.)"""
    # lazy: roofline.measurement.harness imports numpy (start-up)
    from roofline.measurement.harness import analysis_free, timed_result

    backend = _backend_argument(backend, backend_name, "auto")

    if min_time < 0 or min_repeats < 1:
        raise InputError("min_time must be >= 0 and min_repeats >= 1")
    spec = _spec_name(spec, "auto")
    if reference is not None:
        _check_reference(reference)
    if name is None and descriptor is None and getattr(fn, "__name__", "<lambda>") != "<lambda>":
        name = fn.__name__
    work = workload(name, flops=flops, bytes=bytes, descriptor=descriptor,
                    params=params, kernels=kernels, roof=roof, dtype=dtype)
    engine = _open_backend(backend, device)
    machine = _machine(spec, engine)
    if machine is not None and work.roof not in machine.roofs:
        raise InputError(f"roof={work.roof!r}: {machine.id} has no such roof; it has {', '.join(machine.roofs)}")

    base = analyze_on(machine, work).to_dict() if machine is not None else analysis_free(work)
    run = _on_stream(fn, engine)
    first = _call_args(inputs)
    origin = {"backend": engine.name, "device": device, "spec": spec}
    problem = _verify(run, first, check, reference, rtol, atol, engine)
    if problem is not None:
        return Result.failure(base, problem, timing=None, buffer_sets=1, gpu_state=None, phases={},
                                    **{MEASURED_WITH: origin})
    notes = [] if check is not None or reference is not None else [
        warning("unverified", "unverified: timed without a check of its output",
                "give check= or reference= so roofline can tell a fast result from a wrong one")]
    sets = [first]
    if inputs is not None:  # copies sized from the data itself: bytes= may be the model's count, not the arguments'
        size = _argument_bytes(first) or int(work.bytes)
        sets += [_call_args(inputs) for _ in range(buffer_sets(size, engine.cache_bytes, MeasurePolicy()) - 1)]
    elif work.bytes < MeasurePolicy().rotate_below * engine.cache_bytes:
        notes.append(warning("cache-resident", "the data may stay in the cache between repeats",
                             "pass inputs= a factory of fresh argument sets, so copies are rotated"))
    timing = engine.time_runs(run, sets, MeasurePolicy(min_time=min_time, min_repeats=min_repeats))
    verified = check is not None or reference is not None
    result = timed_result(base, work, base.get("sol_time"), timing, len(sets), {}, verified, notes)
    warned = tuple(in_api_words(w) if isinstance(w, str) else
                   {k: in_api_words(v) if isinstance(v, str) else v for k, v in w.items()} for w in result.warnings)
    return _as_result(replace(result, warnings=warned, extra={**result.extra, MEASURED_WITH: origin}))


@speaks_api
def results(measured: Sequence[KernelResult], backend: str | None = None, device: int | None = None,
            spec: str | None = None, *, backend_name: str | None = None) -> ResultsDocument:
    """The results document of API measurements, for `roofline report` and `roofline plot` (`.write(path)`): the
    same document `roofline measure` writes, without its policy block (each call may time differently).

    The backend, device and spec are those the results were measured with (one document holds one of each);
    the arguments are only for results that do not say (they default to the GPU and its own spec). A name
    measured twice at the same parameters (two unnamed callables are both 'callable') is kept for each result,
    the later ones as 'NAME #2', 'NAME #3'."""
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import results_document

    backend = _backend_argument(backend, backend_name, None)
    for i, k in enumerate(measured):
        if not isinstance(k, KernelResult):
            raise InputError(f"roofline.results(): item {i} is {type(k).__name__}: expected the KernelResult that "
                             "roofline.measure returns")
    origins = [o for o in (k.extra.get(MEASURED_WITH) for k in measured) if isinstance(o, Mapping)]
    engine = _open_backend(_recorded(origins, "backend", backend, "backend", "auto"),
                     _recorded(origins, "device", device, "device", 0))
    machine = _recorded_machine(origins, spec, engine)
    entries = []
    for k in measured:
        entry = k.to_json()
        entry.pop(MEASURED_WITH, None)  # the document says it once, at the top
        entries.append(entry)
    doc = results_document(engine, machine, _distinct_names(entries), None)
    return ResultsDocument.from_json(doc, "roofline.results()")


MEASURED_WITH = "measured_with"  # extra key: the backend, device and spec roofline.measure used


def _recorded(origins: list[Mapping[str, Any]], key: str, given: Any, argument: str, default: Any) -> Any:
    """The backend or device the results were measured with (the argument, then the default, when they do not say);
    an InputError when they differ or the argument contradicts them."""
    canon = (lambda v: "cupy" if v == "auto" else v) if key == "backend" else (lambda v: v)
    if key == "device" and all(o.get("backend") == "numpy" for o in origins):
        origins = []  # the host has no device number
    values = {canon(o.get(key)) for o in origins}
    if len(values) > 1:
        raise InputError(f"roofline.results(): the results were measured with different {key}s "
                         f"({', '.join(sorted(map(str, values)))}): one results document holds one; write one per "
                         f"{key}")
    if not values:
        return default if given is None else given
    recorded = values.pop()
    if given is not None and canon(given) != recorded:
        raise InputError(f"roofline.results(): {argument}={given!r}, but the results were measured with {key} "
                         f"{recorded!r}; leave {argument}= out")
    return recorded


def _recorded_machine(origins: list[Mapping[str, Any]], spec: str | None, engine: Any) -> MachineSpec | None:
    """The spec the results were measured against (compared as resolved: 'auto', an alias and an id may name one)."""
    named = {str(o.get("spec")) for o in origins}
    machines = {name: _machine(name, engine) for name in sorted(named)}
    ids = {m.id if m is not None else None for m in machines.values()}
    if len(ids) > 1:
        shown = ", ".join(f"{n} ({m.id if m else 'no spec'})" for n, m in machines.items())
        raise InputError(f"roofline.results(): the results were measured against different specs ({shown}): one "
                         "results document holds one; write one per spec")
    if spec is None:
        return next(iter(machines.values())) if machines else _machine("auto", engine)
    chosen = _machine(spec, engine)
    if ids and ids != {chosen.id if chosen else None}:
        raise InputError(f"roofline.results(): spec={spec!r}, but the results were measured against "
                         f"{next(iter(ids)) or 'no spec'}; leave spec= out")
    return chosen


def _distinct_names(entries: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Entries whose (name, params) repeat an earlier one renamed 'NAME #2', 'NAME #3': a document holds each once."""
    taken: set[tuple[str, str, str]] = set()
    out = []
    for entry in entries:
        candidate, n = entry, 1
        while kernel_identity(candidate) in taken:
            n += 1
            candidate = {**entry, "name": f"{entry['name']} #{n}"}
        taken.add(kernel_identity(candidate))
        out.append(candidate)
    return out


def _call_args(inputs: Callable[[], Any] | None) -> dict[str, Any]:
    if inputs is None:
        return {"args": (), "kwargs": {}}
    made = inputs()
    if isinstance(made, Mapping):
        return {"args": (), "kwargs": dict(made)}
    if isinstance(made, (tuple, list)):
        return {"args": tuple(made), "kwargs": {}}
    raise InputError(f"inputs() returned {type(made).__name__}: expected a dict of keyword arguments or a tuple")


def _argument_bytes(call: Mapping[str, Any], depth: int = 2) -> int:
    """The bytes of the arrays in one argument set (`nbytes` of NumPy, CuPy and PyTorch arrays, also inside tuples,
    lists and dicts); 0 when it holds none."""
    def size(value: Any, level: int) -> int:
        nbytes = getattr(value, "nbytes", None)
        if isinstance(nbytes, int) and not isinstance(nbytes, bool):
            return max(nbytes, 0)
        if level < depth and isinstance(value, (tuple, list)):
            return sum(size(v, level + 1) for v in value)
        if level < depth and isinstance(value, Mapping):
            return sum(size(v, level + 1) for v in value.values())
        return 0

    return sum(size(v, 0) for v in (*call["args"], *call["kwargs"].values()))


def _check_reference(reference: Any) -> None:
    """reference= must be numbers: an array (NumPy, CuPy, PyTorch), a number, or a tuple, list or dict of them. A
    string or an array of objects cannot be compared within a tolerance: an InputError before anything runs."""
    import numpy as np  # lazy: numpy is a start-up cost only this path pays

    for i, item in enumerate(_as_list(reference)):
        try:
            kind = _host(item).dtype.kind
        except Exception as exc:  # noqa: BLE001 - whatever it is, it is not an array of numbers
            raise InputError(f"reference= item {i}: {type(item).__name__} cannot be read as an array "
                             f"({type(exc).__name__})") from None
        if kind not in "biufc":
            raise InputError(f"reference= item {i}: {type(item).__name__} of dtype {np.dtype(_host(item).dtype)}: "
                             "expected numbers (an array, a number, or a tuple, list or dict of them)")


def _on_stream(fn: Callable[..., Any], engine: Any) -> Callable[..., Any]:
    """fn(*args, **kwargs) on the backend's stream; PyTorch (when imported) is pointed at the same stream."""
    torch = sys.modules.get("torch")
    if engine.name != "cupy" or torch is None or not torch.cuda.is_available():
        return lambda args, kwargs: fn(*args, **kwargs)
    stream = torch.cuda.ExternalStream(engine.stream.ptr, device=torch.device("cuda", engine.device_id))

    def run(args: tuple, kwargs: dict) -> Any:
        with torch.cuda.stream(stream):
            return fn(*args, **kwargs)

    return run


def _verify(run: Callable[..., Any], first: dict[str, Any], check: Callable[[], Any] | None, reference: Any,
            rtol: float, atol: float, engine: Any) -> str | None:
    """None when the first run checks out; otherwise why (the result is FAILED and never timed)."""
    try:
        out = run(**first)
        engine.synchronize()
        if check is not None:
            problem = check_outcome(check())
            if problem is not None:
                return problem
    except InputError:
        raise
    except Exception as exc:  # noqa: BLE001 - the user's code failed: reported, never timed
        return f"{type(exc).__name__}: {first_line(exc)}"
    if reference is None:
        return None
    import numpy as np  # lazy: numpy is a start-up cost only this path pays

    got, want = _as_list(out), _as_list(reference)
    if len(got) != len(want):
        return f"returned {counted(len(got), 'output')}, reference has {len(want)}"
    for i, (g, w) in enumerate(zip(got, want)):
        try:
            g = _host(g)
        except Exception as exc:  # noqa: BLE001 - the callable returned something that is no array
            return f"output {i}: {type(g).__name__} cannot be read as an array ({type(exc).__name__})"
        w = _host(w)
        if g.shape != w.shape:
            return f"output {i}: shape {g.shape}, reference {w.shape}"
        if g.dtype.kind not in "biufc":
            return f"output {i}: dtype {g.dtype}, not numbers: it cannot be compared with the reference"
        bad = ~np.isclose(g, w, rtol=rtol, atol=atol)
        if bad.any():
            at = tuple(int(j) for j in np.argwhere(bad)[0])
            return (f"output {i}: {int(bad.sum())} of {g.size} elements outside tolerance (rtol {rtol:g}, atol "
                    f"{atol:g}); first at {at}: got {g[at]!r}, expected {w[at]!r}")
    return None


def check_outcome(value: Any) -> str | None:
    """None when what check() returned is true; otherwise why the result fails.

    Only a boolean is a verdict: True, np.True_, or a one-element boolean array (CuPy, PyTorch and NumPy reductions
    such as `(out == ref).all()` give those). Anything else fails: False, None (a check that forgot to `return`), a
    number (an error measure is not a verdict: 0.3 must not pass). An array of several elements has no single truth:
    that is the caller's mistake, an InputError."""
    if isinstance(value, bool):
        return None if value else "check() returned False"
    if value is None:
        return "check() returned None: return True when the output is right (a missing `return`?)"
    shape = getattr(value, "shape", None)
    if shape is None:
        number = " (a number is not a verdict)" if isinstance(value, (int, float)) else ""
        return f"check() returned {type(value).__name__} {_short(value)}: expected True or False{number}"
    try:
        shape = tuple(int(extent) for extent in shape)
    except (TypeError, ValueError):
        shape = None
    if shape is None or math.prod(shape) != 1:
        raise InputError(f"check() returned an array of shape {_short(getattr(value, 'shape', None))}, whose truth "
                         "is ambiguous: return one boolean, e.g. bool((out == expected).all()) or "
                         "np.allclose(out, expected)")
    dtype = str(getattr(value, "dtype", ""))
    if "bool" not in dtype:
        return f"check() returned a one-element {dtype or type(value).__name__} array: expected a boolean"
    try:
        truth = value.item() if hasattr(value, "item") else bool(value)  # one device-to-host copy for CuPy/PyTorch
    except Exception as exc:  # noqa: BLE001 - a foreign array type that cannot say its value
        return f"check() returned a {type(value).__name__} whose value cannot be read: {type(exc).__name__}"
    return None if truth is True or (type(truth).__name__ == "bool_" and bool(truth)) else "check() returned False"


def _short(value: Any) -> str:
    try:
        text = repr(value)
    except ValueError:  # an int past Python's 4300-digit str limit
        return f"an integer of {value.bit_length()} bits" if isinstance(value, int) else type(value).__name__
    return text if len(text) <= 40 else text[:39] + "…"


def _as_list(value: Any) -> list[Any]:
    if isinstance(value, Mapping):
        return [value[k] for k in sorted(value)]
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _host(array: Any) -> Any:
    import numpy as np  # lazy: numpy is a start-up cost only this path pays

    if hasattr(array, "detach"):  # torch
        array = array.detach().float().cpu().numpy() if str(array.dtype) == "torch.bfloat16" else \
            array.detach().cpu().numpy()
    elif hasattr(array, "get") and not isinstance(array, dict):  # cupy
        array = array.get()
    return np.asarray(array)
