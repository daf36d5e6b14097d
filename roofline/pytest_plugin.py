"""pytest plugin (entry point `pytest11: roofline`): the `roofline_check` fixture puts a callable on the roofline
inside a test, and fails the test in one line when it is wrong or short of the share of its ceiling asked for.

Options: --roofline-json PATH writes every result of the run into one results file (for `roofline report` and
`roofline plot`), checked before any test runs and merged across pytest-xdist workers; --roofline-spec picks the
ceilings (default: the GPU's own); --roofline-backend numpy times host callables by wall clock (no GPU). Without a
GPU a test using the fixture is skipped, with the reason.

A result without name= (and without descriptor=) is named after its test's node id, so two tests timing unnamed
lambdas stay two results; a test run again (reruns) keeps its last result.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Callable

import pytest

# (test node id, call number within the test) -> the result's JSON entry: a rerun replaces its own entries only
_RESULTS = pytest.StashKey[dict]()
_WORKER_OUTPUT = "roofline_results"  # where an xdist worker hands its results to the controller


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roofline", "GPU roofline checks (roofline_check fixture)")
    group.addoption("--roofline-json", metavar="PATH", default=None,
                    help="Write every roofline_check result of the run to this results file.")
    group.addoption("--roofline-spec", metavar="SPEC", default="auto",
                    help="Ceilings: 'auto' (the GPU's own spec), a bundled id or alias, or a YAML path.")
    group.addoption("--roofline-backend", choices=("auto", "cupy", "numpy"), default="auto",
                    help="cupy (auto): the GPU; numpy: host callables timed by wall clock.")


# the API keywords the plugin fills in from its own options: a hint about them names the option
PLUGIN_OPTIONS = {"backend": "--roofline-backend", "spec": "--roofline-spec"}


def in_plugin_words(text: str, supplied: set[str]) -> str:
    """An API message (roofline.api speaks keywords) as the plugin's user reads it: `backend="numpy"` is
    `--roofline-backend numpy` when the plugin supplied backend= from its option (not when the test passed it)."""
    for keyword in supplied:
        option = PLUGIN_OPTIONS[keyword]
        text = re.sub(rf'(?<![\w.]){keyword}="([^"]*)"', rf"{option} \1", text)
        text = re.sub(rf"(?<![\w.]){keyword}=(?:\.\.\.)?(?=[\s:;,)]|$)", option, text)
        text = re.sub(rf"(?<![\w.]){keyword}=([A-Z]+)\b", rf"{option} \1", text)
    return text


def _is_worker(config: pytest.Config) -> bool:
    return hasattr(config, "workerinput")  # pytest-xdist sets it on each worker's config


def pytest_configure(config: pytest.Config) -> None:
    """A results file that cannot be written is a usage error now, not after the whole run."""
    config.stash[_RESULTS] = {}
    path = config.getoption("roofline_json")
    if path and not _is_worker(config):
        # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
        from roofline.load.jsonio import cannot_write

        why = cannot_write(Path(path))
        if why is not None:
            raise pytest.UsageError(f"--roofline-json {path}: cannot write: {why}")


def pytest_report_header(config: pytest.Config) -> str | None:
    """Said once, at the start: the NumPy backend without a spec has no ceiling to compare with."""
    if config.getoption("roofline_backend") == "numpy" and config.getoption("roofline_spec") == "auto":
        return ("roofline: --roofline-backend numpy without --roofline-spec: results have no ceiling, so checks "
                "with at_least= fail (give --roofline-spec SPEC to compare with a GPU's ceilings)")
    return None


def shortfall(result: Any, at_least: float | None) -> str | None:
    """The one line a test fails with, or None when the result is verified and (with at_least) reaches that share of
    its ceiling. Without at_least an unknown ceiling is no failure: only a share asked for needs one."""
    # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
    from roofline.records.files import ceiling_of
    # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
    from roofline.model.units import format_fraction, format_si

    if result.failed:
        return f"{result.name} FAILED: {result.error or 'not verified: give check= or reference='}"
    if at_least is None:
        return None
    fraction = result.fraction_of_ceiling
    if fraction is None:
        return f"{result.name}: the ceiling is unknown (no spec), so at_least= cannot hold: pass --roofline-spec"
    if fraction < at_least:
        return (f"{result.name} reached {format_fraction(fraction)} of its {format_si(*ceiling_of(result.to_json()))} "
                f"ceiling; needs {format_fraction(at_least)}")
    return None


@pytest.fixture
def roofline_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """roofline_check(fn, flops=..., bytes=... | descriptor=..., params=..., at_least=0.8, check=...) -> KernelResult.

    Without name= the result is named after the test's node id (a second unnamed call in the test: 'NODEID #2')."""
    config = request.config
    calls = {"all": 0, "unnamed": 0}

    def run(fn: Callable[..., Any], *, at_least: float | None = None, **kwargs: Any) -> Any:
        # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
        from roofline.api import measure
        # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
        from roofline.errors import BackendUnavailable, RooflineError

        supplied = {k for k in PLUGIN_OPTIONS if kwargs.get(k) is None} - (
            {"backend"} if kwargs.get("backend_name") is not None else set())
        kwargs.setdefault("spec", config.getoption("roofline_spec"))
        if kwargs.get("backend_name") is None:  # (its deprecated spelling, which roofline.api still takes)
            kwargs.setdefault("backend", config.getoption("roofline_backend"))
        if at_least is not None and not 0 < at_least <= 1:
            raise ValueError(f"at_least={at_least!r}: expected a fraction in (0, 1]")
        calls["all"] += 1
        if kwargs.get("name") is None and kwargs.get("descriptor") is None:
            calls["unnamed"] += 1
            kwargs["name"] = request.node.nodeid + (f" #{calls['unnamed']}" if calls["unnamed"] > 1 else "")
        try:
            result = measure(fn, **kwargs)
        except BackendUnavailable as exc:
            pytest.skip(f"roofline: {in_plugin_words(exc.message, supplied)}")
        except RooflineError as exc:
            pytest.fail(f"roofline: {in_plugin_words(exc.message, supplied)}", pytrace=False)
        config.stash[_RESULTS][(request.node.nodeid, calls["all"])] = result.to_json()
        problem = shortfall(result, at_least)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        return result

    return run


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node: Any, error: Any) -> None:
    """pytest-xdist, in the controller: a worker finished; keep its results for the one file."""
    payload = getattr(node, "workeroutput", {}).get(_WORKER_OUTPUT)
    if payload:
        store = node.config.stash[_RESULTS]
        # lazy: the plugin is loaded by every pytest run that has roofline installed
        from roofline.load import handoff

        for nodeid, call, entry in handoff.loads(payload):
            store[(nodeid, call)] = entry


def _plain(value: Any) -> Any:
    return value.item() if hasattr(value, "item") else str(value)  # NumPy scalars a user passed in params=


def pytest_sessionfinish(session: pytest.Session) -> None:
    """A worker hands its results to the controller; the controller (or a run without xdist) writes the file."""
    config = session.config
    measured: dict = config.stash.get(_RESULTS, {})
    if _is_worker(config):
        config.workeroutput[_WORKER_OUTPUT] = json.dumps(  # type: ignore[attr-defined]
            [[nodeid, call, entry] for (nodeid, call), entry in measured.items()], default=_plain)
        return
    path = config.getoption("roofline_json")
    if not path or not measured:
        return
    # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
    from roofline.api import results
    # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
    from roofline.errors import RooflineError
    # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
    from roofline.records.document import KernelResult

    items = sorted(measured.items(), key=lambda item: item[0])  # the same file whatever the workers' order
    try:
        results([KernelResult.from_fields(e) for e in _qualified(items)]).write(path)
    except (RooflineError, OSError) as exc:
        reporter = config.pluginmanager.get_plugin("terminalreporter")
        if reporter is not None:
            reporter.write_line(f"roofline: --roofline-json {path} not written: {exc}", red=True)
        if session.exitstatus == pytest.ExitCode.OK:
            session.exitstatus = pytest.ExitCode.TESTS_FAILED


def _qualified(items: list) -> list[dict[str, Any]]:
    """Entries; one whose name and parameters another test's entry also has gets its test's id: 'NAME [NODEID]'."""
    # lazy: every pytest run imports this plugin; only a measuring test needs this (start-up)
    from roofline.records.schema import kernel_identity

    owners: dict[tuple[str, str, str], set[str]] = {}
    for (nodeid, _), entry in items:
        owners.setdefault(kernel_identity(entry), set()).add(nodeid)
    return [{**entry, "name": f"{entry['name']} [{nodeid}]"} if len(owners[kernel_identity(entry)]) > 1 else entry
            for (nodeid, _), entry in items]
