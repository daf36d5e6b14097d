"""pytest plugin (entry point `pytest11: roofline`): the `roofline_check` fixture puts a callable on the roofline
inside a test, and fails the test in one line when it is wrong or short of the share of its ceiling asked for.

Options: --roofline-json PATH writes every result of the run into one results file (for `roofline report` and
`roofline plot`); --roofline-spec picks the ceilings (default: the GPU's own); --roofline-backend numpy times host
callables by wall clock (no GPU). Without a GPU a test using the fixture is skipped, with the reason.
"""

from __future__ import annotations

from typing import Any, Callable

import pytest

_RESULTS = pytest.StashKey[list]()


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("roofline", "GPU roofline checks (roofline_check fixture)")
    group.addoption("--roofline-json", metavar="PATH", default=None,
                    help="Write every roofline_check result of the run to this results file.")
    group.addoption("--roofline-spec", metavar="SPEC", default="auto",
                    help="Ceilings: 'auto' (the GPU's own spec), a bundled id or alias, or a YAML path.")
    group.addoption("--roofline-backend", choices=("auto", "cupy", "numpy"), default="auto",
                    help="cupy (auto): the GPU; numpy: host callables timed by wall clock.")


def pytest_configure(config: pytest.Config) -> None:
    config.stash[_RESULTS] = []


def shortfall(result: Any, at_least: float) -> str | None:
    """The one line a test fails with, or None when the result is verified and reaches `at_least` of its ceiling."""
    from roofline.resultfiles import ceiling_of
    from roofline.units import format_si

    if result.failed:
        return f"{result.name} FAILED: {result.error or 'not verified: give check= or reference='}"
    fraction = result.fraction_of_ceiling
    if fraction is None:
        return f"{result.name}: the ceiling is unknown (no spec): pass --roofline-spec"
    if fraction < at_least:
        return (f"{result.name} reached {fraction:.0%} of its {format_si(*ceiling_of(result.to_json()))} ceiling; "
                f"needs {at_least:.0%}")
    return None


@pytest.fixture
def roofline_check(request: pytest.FixtureRequest) -> Callable[..., Any]:
    """roofline_check(fn, flops=..., bytes=... | descriptor=..., params=..., at_least=0.8, check=...) -> KernelResult."""
    config = request.config

    def run(fn: Callable[..., Any], *, at_least: float | None = None, **kwargs: Any) -> Any:
        from roofline.api import measure
        from roofline.errors import BackendUnavailable

        kwargs.setdefault("spec", config.getoption("roofline_spec"))
        kwargs.setdefault("backend_name", config.getoption("roofline_backend"))
        if at_least is not None and not 0 < at_least <= 1:
            raise ValueError(f"at_least={at_least!r}: expected a fraction in (0, 1]")
        try:
            result = measure(fn, **kwargs)
        except BackendUnavailable as exc:
            pytest.skip(f"roofline: {exc.message}")
        config.stash[_RESULTS].append((kwargs["backend_name"], kwargs["spec"], result))
        problem = shortfall(result, at_least if at_least is not None else 0.0)
        if problem is not None:
            pytest.fail(problem, pytrace=False)
        return result

    return run


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = session.config.getoption("roofline_json")
    measured = session.config.stash.get(_RESULTS, [])
    if not path or not measured:
        return
    from roofline.api import results

    backend_name, spec, _ = measured[0]
    seen: dict[tuple[str, str], Any] = {}
    for _, _, r in measured:  # a test run twice (reruns, parametrised names) keeps its last result
        seen[(r.name, repr(sorted(r.params.items())))] = r
    results(list(seen.values()), backend_name=backend_name, spec=spec).write(path)
