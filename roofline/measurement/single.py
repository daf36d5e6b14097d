"""`measure` on one device (a GPU, or the host CPU with --backend numpy): open it, choose its spec, decide which
kernels run (the skipped ones said, the ones not run here kept as entries), measure them into the results document,
and the verdict on it. The command line passes its progress display and notes, renders the document and raises the
verdict; every GPU of a host is roofline.measurement.multi, MPI ranks roofline.fleet."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, ContextManager, Mapping, Sequence

from roofline.errors import GateFailed, InputError, RooflineError
from roofline.load.specs import SpecCatalog
from roofline.measurement.policy import MeasurePolicy
from roofline.measurement.progress import Progress
from roofline.records.document import entry_failed
from roofline.model.counts import counted


@dataclass
class SingleRun:
    """A `measure` on one device, decided and ready to run: the open backend, the spec (None: no spec), the kernels
    that run and the entries of those that do not."""

    engine: Any
    machine: Any
    runnable: list[Any]  # roofline.model.types.KernelDescriptor, in the order they run
    overrides: Mapping[str, Any]
    policy: MeasurePolicy
    not_run: list[dict[str, Any]]

    def measure(self, showing: Callable[[], ContextManager[Progress]],
                on_stopped: Callable[[dict[str, Any], int], None]) -> list[dict[str, Any]]:
        """Every kernel's entry, in order, with the progress display `showing()` opens held while they run. A kernel
        that stops the run with an error only running could find: once the display is closed, on_stopped(the
        document of the kernels measured before it, how many), so they can be kept, then the error."""
        # lazy: roofline.measurement.session imports numpy (start-up)
        from roofline.measurement.session import measure_all

        entries: list[dict[str, Any]] = []
        try:
            with showing() as progress:
                measure_all(self.runnable, self.overrides, self.engine, self.machine, self.policy, progress, entries)
        except RooflineError:
            if entries:
                on_stopped(self.document(entries), len(entries))
            raise
        return entries

    def document(self, entries: Sequence[dict[str, Any]]) -> dict[str, Any]:
        """The results document of these entries and the kernels not run here."""
        # lazy: roofline.measurement.session imports numpy (start-up)
        from roofline.measurement.session import results_document

        return results_document(self.engine, self.machine, [*entries, *self.not_run], self.policy)


def single_run(selected: Sequence[Any], overrides: Mapping[str, Any], named: bool, backend: str, device: int,
               spec_name: str, policy: MeasurePolicy, on_note: Callable[[str], None]) -> SingleRun:
    """Open `backend` on `device`, choose the spec and the kernels that can run here (each skipped one said through
    on_note, then the host note of --backend numpy); InputError when none can."""
    # lazy: roofline.measurement.session imports numpy (start-up)
    from roofline.measurement.session import choose_machine, host_sizes, open_backend, runnable, skipped_entry

    engine = open_backend(backend, device)
    machine = choose_machine(spec_name, engine, SpecCatalog.bundled())
    chosen = runnable(selected, named, machine)
    for name, why in chosen.skipped:
        on_note(f"note: {name} skipped: it {why}")
    if not chosen.runnable:
        raise InputError("no selected kernel can be measured")
    if engine.name == "numpy":
        on_note(f"note: --backend numpy runs the NumPy references on the HOST CPU, timed by wall clock, at "
                f"{host_sizes(chosen.runnable, overrides)}")
    return SingleRun(engine, machine, list(chosen.runnable), overrides, policy,
                     [skipped_entry(d, overrides, machine, why) for d, why in chosen.not_run])


def verdict(doc: Mapping[str, Any]) -> None:
    """Exit 1 (GateFailed) naming the kernels that FAILED verification (five, then how many more)."""
    failed = [e["name"] for e in doc["kernels"] if entry_failed(e)]
    if failed:
        raise GateFailed(f"{counted(len(failed), 'kernel')} FAILED verification: {', '.join(failed[:5])}"
                         + (f" and {len(failed) - 5} more" if len(failed) > 5 else ""))
