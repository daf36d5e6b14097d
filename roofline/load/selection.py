"""Selection helpers: which kernels and specs a command names, and their analyses on each machine.

Several commands (analyze, plot, kernels show, measure, profile) start the same way: load the kernel catalogue and
pick the named kernels with their -p overrides, resolve the --spec names, and analyse each kernel on each machine
that has its roof. These steps live here once.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Collection, Mapping, Sequence

from roofline.model.analysis import KernelAnalysis, analysis_document, analyze, lacks
from roofline.errors import InputError
from roofline.model.expr import Expr
from roofline.load.kernels import KernelCatalog, parse_overrides
from roofline.model.types import KernelDescriptor, MachineSpec
from roofline.load.specs import SpecCatalog
from roofline.model.workload import evaluate


def load_selection(
    names: Sequence[str], kernel_paths: Sequence[Path], params: Sequence[str]
) -> tuple[list[KernelDescriptor], Mapping[str, Expr]]:
    catalog = KernelCatalog.load(kernel_paths)
    selected = catalog.select(names)
    return selected, parse_overrides(params, selected)


def resolve_specs(spec_names: Sequence[str]) -> list[MachineSpec]:
    """The named specs, once each; 'auto' is the visible GPU's own spec or the stated default (roofline.load.autospec)."""
    # lazy: not needed by `roofline kernels show`, which imports this module (start-up)
    from roofline.load.autospec import AUTO, auto_spec

    catalog = SpecCatalog.bundled()
    machines = [auto_spec(catalog).machine if n.strip().lower() == AUTO else catalog.resolve(n) for n in spec_names]
    return list({m.id: m for m in machines}.values())


def analyze_selection(
    machine: MachineSpec, selected: Sequence[KernelDescriptor], overrides: Mapping[str, Expr]
) -> tuple[list[KernelAnalysis], list[tuple[str, str]]]:
    """Analyses for the kernels whose roofs the machine has, and (name, what it lacks) of the others."""
    results, skipped = [], []
    for d in selected:
        missing = lacks(machine, d)
        if missing is not None:
            skipped.append((d.name, missing))
            continue
        overrides_here = {k: v for k, v in overrides.items() if k in d.params}
        results.append(analyze(machine, evaluate(d, overrides_here)))
    if not results:
        raise InputError(
            f"none of the selected kernels can be analysed on {machine.id}: "
            f"it lacks what they need ({', '.join(sorted({r for _, r in skipped}))})"
        )
    return results, skipped


@dataclass(frozen=True)
class Skipped:
    """A kernel left out on one machine because the spec lacks a roof it needs (a compute roof, a link)."""

    machine: str
    kernel: str
    needs: str  # 'the bf16_tensor roof', 'interconnect.nvlink'

    def __str__(self) -> str:
        return f"{self.kernel} skipped on {self.machine}: it needs {self.needs}, which this spec does not give"


def analysis_documents(
    machines: Sequence[MachineSpec], selected: Sequence[KernelDescriptor], overrides: Mapping[str, Expr],
    power_limit_what_if: bool = False,
) -> tuple[list[dict[str, Any]], list[Skipped]]:
    """One roofline/analysis/v1 document per machine, and the kernels each machine had to skip.
    `power_limit_what_if`: the machines' power limits are the user's (analyze --power-limit)."""
    docs, skipped = [], []
    for machine in machines:
        results, lacking = analyze_selection(machine, selected, overrides)
        skipped += [Skipped(machine.id, name, roof) for name, roof in lacking]
        docs.append(analysis_document(machine, results, power_limit_what_if))
    return docs, skipped


def spec_for_device(names: Collection[str], spec_name: str | None, catalog: SpecCatalog, source: str,
                    unnamed: str) -> MachineSpec:
    """The importers' one rule (ncu CSVs, torch traces): --spec when given; else the bundled spec whose
    device_names lists the one GPU the input names. `source` says what named them ('the CSV', 'the traces');
    `unnamed` is the refusal when it names none (what to collect, or which field is empty)."""
    if spec_name and spec_name != "auto":
        return catalog.resolve(spec_name)
    if len(names) > 1:
        raise InputError(f"{source} name several GPUs ({', '.join(sorted(names))}); choose the ceilings with --spec")
    if not names:
        raise InputError(f"{unnamed}; say which spec to compare with: --spec h200 (see 'roofline specs')")
    name = next(iter(names))
    matched = catalog.match_device(name)
    if matched is None:
        raise InputError(f"no bundled spec lists the device '{name}'; say which to compare with: --spec SPEC "
                         "(a bundled id or a YAML file; see 'roofline specs')")
    return matched
