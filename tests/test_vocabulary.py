"""One vocabulary across the CLI, the API and the pytest plugin (issue 31; docs/cli.md, "One vocabulary"): every
click command is walked and held to one spelling per concept, every --device and --group-by reads the same forms,
and the old spellings still work as hidden options."""

from __future__ import annotations

import inspect
from typing import Any, Iterator

import click
import pytest

from roofline import api
from roofline.cli import cli
from roofline.cli.common import DEVICE_METAVAR, GROUP_BY_WORDS
from roofline.errors import API_WORDS


def commands() -> Iterator[tuple[str, click.Command]]:
    def walk(command: click.Command, path: str) -> Iterator[tuple[str, click.Command]]:
        if isinstance(command, click.Group):
            ctx = click.Context(command)
            for name in command.list_commands(ctx):  # the lazy group loads each command as it is asked for
                sub = command.get_command(ctx, name)
                assert sub is not None, name
                yield from walk(sub, f"{path} {name}".strip())
        else:
            yield path, command

    yield from walk(cli, "")


def options(hidden: bool = False) -> Iterator[tuple[str, click.Command, click.Option]]:
    for path, command in commands():
        for p in command.params:
            if isinstance(p, click.Option) and p.hidden == hidden:
                yield path, command, p


def named(option: str, hidden: bool = False) -> list[tuple[str, click.Command, click.Option]]:
    return [(path, c, p) for path, c, p in options(hidden) if option in p.opts or option in p.secondary_opts]


def process(command: click.Command, option: click.Option, value: Any) -> Any:
    """What the command's option makes of `value` (its type and callback), as click reads it."""
    ctx = click.Context(command, info_name=command.name)
    return option.process_value(ctx, value)


def parsed(path: str, *argv: str) -> dict[str, Any]:
    """The command's parameters after click parsed `argv` (nothing runs)."""
    command = dict(commands())[path]
    with command.make_context(path, list(argv)) as ctx:
        return dict(ctx.params)


# ---- one spelling per concept -------------------------------------------------------------------------------------

def test_the_ncu_executable_is_ncu_path_everywhere():
    takers = [(path, p) for path, _, p in options() if p.name == "ncu_path"]
    assert {path for path, _ in takers} >= {"measure", "profile", "doctor"}
    for path, p in takers:
        assert p.opts == ["--ncu-path"] and p.metavar == "PATH", path
    for path, _, p in named("--ncu"):  # a visible --ncu is a switch (doctor's replay), never a path
        assert p.is_flag and p.name == "use_ncu", path


def test_a_measured_spec_is_calibrated_everywhere():
    assert not named("--measured-spec"), "no visible --measured-spec: the spelling is --calibrated"
    assert {path for path, _, _ in named("--calibrated")} == {"analyze", "plot", "sweep"}


@pytest.mark.parametrize("form", ["0", "1", "0,2,3", "all", "ALL"])
def test_every_device_option_reads_the_same_forms(form):
    devices = named("--device")
    assert {path for path, _, _ in devices} == {"measure", "sweep", "calibrate", "interconnect", "doctor"}
    for path, command, option in devices:
        assert option.metavar == DEVICE_METAVAR, path
        assert process(command, option, form) == form, path


@pytest.mark.parametrize("form", ["x", "0,0", "-1", "1.5", "", "0,,1"])
def test_every_device_option_refuses_the_same_forms(form):
    for path, command, option in named("--device"):
        with pytest.raises(click.BadParameter):
            process(command, option, form)


def test_every_group_by_option_reads_the_same_words():
    groupers = named("--group-by")
    assert {path for path, _, _ in groupers} == {"profile", "import ncu", "import torch", "plot", "diff"}
    words = "|".join(GROUP_BY_WORDS)
    for path, command, option in groupers:
        assert option.metavar in (words, f"auto|{words}"), path
        for word in ("op", "kernel") + (() if path == "diff" else ("none",)):
            assert process(command, option, word) == word, path
        for word in ("module", "range:2") + (("none",) if path == "diff" else ()):  # diff compares groups
            try:
                assert process(command, option, word) == word
            except click.BadParameter as exc:  # a word this command's data cannot give: refused, and why
                assert "is not one of" not in exc.message and len(exc.message) > 40, (path, word, exc.message)
        with pytest.raises(click.BadParameter, match="is not one of"):
            process(command, option, "range:0")


def test_the_api_and_the_plugin_use_the_clis_names_for_what_they_share():
    measure = dict(commands())["measure"]
    cli_options = {o for p in measure.params if isinstance(p, click.Option) for o in p.opts}
    keywords = set(inspect.signature(api.measure).parameters)
    for option, keyword in API_WORDS.items():
        if option in cli_options:
            assert keyword in keywords, f"{option} is {keyword}= in the API"
    backend = next(p for p in measure.params if p.name == "backend")
    assert tuple(backend.type.choices) == api.BACKENDS

    from roofline import pytest_plugin

    choices = {}

    class Group:
        def addoption(self, name: str, **kw: Any) -> None:
            choices[name] = kw.get("choices")

    class Parser:
        def getgroup(self, *_: Any) -> Group:
            return Group()

    pytest_plugin.pytest_addoption(Parser())  # type: ignore[arg-type]
    assert tuple(choices["--roofline-backend"]) == api.BACKENDS
    assert set(pytest_plugin.PLUGIN_OPTIONS) <= keywords  # the keywords the plugin fills in


# ---- the old spellings still work, hidden ---------------------------------------------------------------------------

def test_old_spellings_land_on_the_new_parameters():
    assert parsed("measure", "--ncu", "/opt/ncu")["ncu_path"] == "/opt/ncu"
    assert parsed("measure", "--ncu-path", "/opt/ncu")["ncu_path"] == "/opt/ncu"
    assert parsed("measure")["ncu_path"] is None
    assert parsed("profile", "--ncu", "/opt/ncu", "--", "true")["ncu_path"] == "/opt/ncu"
    assert parsed("plot", "--measured-spec", "a.yaml")["measured_specs"] == ("a.yaml",)
    assert parsed("plot", "--calibrated", "a.yaml", "--measured-spec", "b.yaml")["measured_specs"] == ("a.yaml",
                                                                                                    "b.yaml")
    assert parsed("plot", "--measured-spec", "b.yaml", "--calibrated", "a.yaml")["measured_specs"] == ("a.yaml",
                                                                                                    "b.yaml")
    assert parsed("doctor", "--device", "1")["device_text"] == "1"
    assert parsed("doctor", "--ncu")["use_ncu"] is True and parsed("doctor", "--no-ncu")["use_ncu"] is False
    hidden = {o for _, _, p in options(hidden=True) for o in p.opts}
    assert {"--ncu", "--measured-spec"} <= hidden


def test_an_old_spelling_says_the_new_one_on_standard_error(run_cli):
    r = run_cli("measure", "--backend", "numpy", "--ncu", "/opt/ncu", "--format", "json", "vector_add", "-p",
                "n=1024", "--min-time", "0", "--min-repeats", "2")
    assert r.code == 0, r.err
    assert "warning: --ncu is deprecated and will be removed in the next release; use --ncu-path PATH" in r.err
    assert '"schema": "roofline/results/v1"' in r.out  # standard output is the document, as before


def test_the_old_measured_spec_spelling_still_draws(run_cli, tmp_path):
    from roofline.load.specs import SpecCatalog

    spec = tmp_path / "m.yaml"
    source = SpecCatalog.bundled().resolve("h100").path
    spec.write_text(open(source, encoding="utf-8").read(), encoding="utf-8")
    for option in ("--measured-spec", "--calibrated"):
        r = run_cli("plot", "vector_add", "--spec", "h100", option, spec, "-o", tmp_path / f"{option}.png",
                    "--dpi", 50)
        assert r.code == 0, r.err


def test_doctor_names_the_way_to_check_several_gpus(run_cli):
    r = run_cli("doctor", "--device", "0,1")
    assert r.code == 2 and "doctor checks one GPU per run" in r.err and "mpirun" in r.err
