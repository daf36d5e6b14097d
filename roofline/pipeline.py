"""The load → evaluate → analyse steps that several commands share."""

from __future__ import annotations

from pathlib import Path
from typing import Mapping, Sequence

from roofline.analysis import KernelAnalysis, analyze
from roofline.errors import InputError
from roofline.expr import Expr
from roofline.kernels import KernelCatalog, parse_overrides
from roofline.model import KernelDescriptor, MachineSpec
from roofline.specs import SpecCatalog
from roofline.workload import evaluate


def load_selection(
    names: Sequence[str], kernel_paths: Sequence[Path], params: Sequence[str]
) -> tuple[list[KernelDescriptor], Mapping[str, Expr]]:
    catalog = KernelCatalog.load(kernel_paths)
    selected = catalog.select(names)
    return selected, parse_overrides(params, selected)


def resolve_specs(spec_names: Sequence[str]) -> list[MachineSpec]:
    catalog = SpecCatalog.bundled()
    machines = [catalog.resolve(n) for n in spec_names]
    return list({m.id: m for m in machines}.values())


def analyze_selection(
    machine: MachineSpec, selected: Sequence[KernelDescriptor], overrides: Mapping[str, Expr]
) -> tuple[list[KernelAnalysis], list[tuple[str, str]]]:
    """Analyses for the kernels whose roof the machine has, and (name, roof) of those it lacks."""
    results, skipped = [], []
    for d in selected:
        if d.roof not in machine.roofs:
            skipped.append((d.name, d.roof))
            continue
        overrides_here = {k: v for k, v in overrides.items() if k in d.params}
        results.append(analyze(machine, evaluate(d, overrides_here)))
    if not results:
        raise InputError(
            f"none of the selected kernels can be analysed on {machine.id}: "
            f"it lacks the roofs they need ({', '.join(sorted({r for _, r in skipped}))})"
        )
    return results, skipped
