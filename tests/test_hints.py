"""Every hint names what exists where it is read (issue 31, "Honest output"): a command line the messages quote
names a real command and its real options; an option a CLI message names exists; the Python API's errors name its
keywords (`backend="numpy"`), not command-line options; the pytest plugin's name its own options; an install hint
installs something that exists: a published package, or an extra pyproject.toml defines from the gpu-roofline
checkout (never 'roofline[...]', another project's name on PyPI, nor 'gpu-roofline[...]' from an index: it is not
published there, see the comment on backend_cupy.CUPY_INSTALL). Each is checked by running what the
hint says against the real thing: click's command objects, the API's signatures, the plugin's parser, pyproject."""

from __future__ import annotations

import ast
import inspect
import re
import shlex
import sys
from pathlib import Path
from typing import Any, Iterator

import click
import pytest

import roofline
from roofline import api
from roofline.errors import BackendUnavailable, RooflineError, in_api_words

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    tomllib = pytest.importorskip("tomli")

PACKAGE = Path(roofline.__file__).parent
PYPROJECT = tomllib.loads((PACKAGE.parent / "pyproject.toml").read_text(encoding="utf-8"))
QUOTED = re.compile(r"'(roofline [^']*)'|`(roofline [^`]*)`")
# Nsight Compute's own options, in the command lines of ncu that hints quote
OTHER_TOOL = re.compile(r"'ncu [^']*'|`ncu [^`]*`|\bncu (?:--?[\w-]+(?:[ =](?!-)[^\s;)]*)?\s?)+")


# ---- what exists ----------------------------------------------------------------------------------------------------

def _commands() -> dict[str, click.Command]:
    """Every roofline command by its path ('measure', 'import ncu', 'fleet links'), groups included."""
    from roofline.cli import cli

    found: dict[str, click.Command] = {}

    def walk(command: click.Command, path: str) -> None:
        found[path] = command
        if isinstance(command, click.Group):  # the lazy group loads a command only when asked for it by name
            ctx = click.Context(command)
            for name in command.list_commands(ctx):
                sub = command.get_command(ctx, name)
                if sub is not None:
                    walk(sub, f"{path} {name}".strip())

    walk(cli, "")
    return found


def visible_options(command: click.Command) -> set[str]:
    out = {"-h", "--help"} | ({"--version"} if command.name == "cli" else set())
    for p in command.params:
        if isinstance(p, click.Option) and not p.hidden:
            out |= set(p.opts) | set(p.secondary_opts)
    return out


def _strings(path: Path) -> Iterator[tuple[int, str, ast.AST]]:
    """Every string literal of a module (an f-string with its fields as {}), with its line and its node."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inner = {id(v) for n in ast.walk(tree) if isinstance(n, ast.JoinedStr) for v in n.values}
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner:
            yield node.lineno, node.value, node
        elif isinstance(node, ast.JoinedStr):
            yield node.lineno, "".join(v.value if isinstance(v, ast.Constant) else "{}" for v in node.values), node


def _sources() -> list[Path]:
    return sorted(p for p in PACKAGE.rglob("*.py") if "_bundled" not in p.parts)


# ---- command lines the messages quote -------------------------------------------------------------------------------

def _quoted_commands() -> list[tuple[str, str]]:
    """Every quoted command line: 'roofline CMD ...', and the short form 'CMD --option' ('report --outlier 5%')."""
    tops = sorted({path.split()[0] for path in _commands() if path})
    short = re.compile(r"['`]((?:%s) -[^'`]*)['`]" % "|".join(map(re.escape, tops)))
    out = []
    for path in _sources():
        for line, text, _ in _strings(path):
            found = [m.group(1) or m.group(2) for m in QUOTED.finditer(text)]
            found += ["roofline " + m.group(1) for m in short.finditer(text)]
            out += [(f"{path.relative_to(PACKAGE.parent)}:{line}", quoted) for quoted in found
                    if "[^" not in quoted]  # a regular expression about quoted commands is not one
    return out


def _check_command_line(quoted: str) -> list[str]:
    """What is wrong with a quoted `roofline ...` command line: an unknown command, an option it does not have."""
    commands = _commands()
    try:
        words = shlex.split(quoted.replace("{}", "X"))[1:]
    except ValueError:
        words = quoted.split()[1:]
    path = ""
    while words and f"{path} {words[0]}".strip() in commands and not words[0].startswith("-"):
        path = f"{path} {words.pop(0)}".strip()
    command = commands[path]
    problems = []
    if isinstance(command, click.Group) and path and words and not words[0].startswith("-"):
        problems.append(f"'roofline {path}' has no command '{words[0]}'")
    for word in words:
        if word == "--":
            break
        if word.startswith("-") and len(word) > 1 and not re.fullmatch(r"-[\d.]+", word):
            option = word.split("=", 1)[0]
            if option not in visible_options(command):
                problems.append(f"'roofline {path}' has no option {option}")
    return problems


def test_every_quoted_command_line_names_a_real_command_and_its_options():
    quoted = _quoted_commands()
    assert len(quoted) > 50  # the scan finds them
    problems = [f"{where}: '{text}': {p}" for where, text in quoted for p in _check_command_line(text)]
    assert not problems, "\n".join(problems)


def test_the_command_line_check_can_fail():
    assert _check_command_line("roofline measure --backend numpy --spec h100") == []
    assert _check_command_line("roofline measure --no-such-option") == ["'roofline measure' has no option "
                                                                        "--no-such-option"]
    assert _check_command_line("roofline import nvprof FILE") == ["'roofline import' has no command 'nvprof'"]


# ---- options the error messages name ------------------------------------------------------------------------------

OPTION = re.compile(r"(?<![\w/.'-])(--[a-z][a-z0-9-]*)")
HINT_CALLS = ("warning", "skipped", "Check", "UsageError", "BadParameter", "fail", "skip")


def _hint_strings(path: Path) -> Iterator[tuple[int, str]]:
    """The strings of a module that reach a user as an error or a hint: what is raised, fix= / why= arguments,
    *_HINT / *_FIX / *INSTALL* constants, and the calls that make caveats, checks and pytest outcomes."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    roots: list[ast.AST] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Raise) and node.exc is not None:
            roots.append(node.exc)
        elif isinstance(node, ast.keyword) and node.arg in ("fix", "why", "hint"):
            roots.append(node.value)
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and re.search("HINT|FIX|INSTALL", t.id)
                                                  for t in node.targets):
            roots.append(node.value)
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in HINT_CALLS:
            roots.append(node)
    for root in roots:
        for sub in ast.walk(root):
            if isinstance(sub, ast.Constant) and isinstance(sub.value, str):
                yield sub.lineno, sub.value


def _own_options(path: Path) -> set[str] | None:
    """The options of the commands a CLI module defines (None for a module shared by several, or the library)."""
    import importlib

    if path.parent.name != "cli":
        return None
    commands = getattr(importlib.import_module(f"roofline.cli.{path.stem}"), "COMMANDS", None)
    if not commands:
        return None

    def flat(command: click.Command) -> Iterator[click.Command]:
        yield command
        for sub in getattr(command, "commands", {}).values():
            yield from flat(sub)

    return set().union(*(visible_options(c) for top in commands for c in flat(top)))


def _plugin_options() -> set[str]:
    from roofline import pytest_plugin

    class Group:
        def __init__(self) -> None:
            self.options: set[str] = set()

        def addoption(self, *names: str, **_: Any) -> None:
            self.options |= set(names)

    group = Group()

    class Parser:
        def getgroup(self, *_: Any) -> Group:
            return group

    pytest_plugin.pytest_addoption(Parser())  # type: ignore[arg-type]
    return group.options


# an option of another tool that a hint names beside the tool ('--kernel' is profile's hidden old spelling, named
# in the message that refuses both)
NOT_OURS = {"--kernel"}


def test_every_option_a_message_names_exists_where_it_is_read():
    every = set().union(*(visible_options(c) for c in _commands().values()))
    plugin = _plugin_options()
    problems = []
    for path in _sources():
        own = _own_options(path)
        for line, text in _hint_strings(path):
            for option in OPTION.findall(OTHER_TOOL.sub("", QUOTED.sub("", text))):
                where = f"{path.relative_to(PACKAGE.parent)}:{line}"
                if path.name == "pytest_plugin.py":
                    if option not in plugin:
                        problems.append(f"{where}: the plugin has no option {option}")
                elif path.name == "api.py":
                    problems.append(f"{where}: the API names the command-line option {option}")
                elif option in NOT_OURS:
                    continue
                elif option not in (own if own is not None else every):
                    problems.append(f"{where}: {option} is no option of " +
                                    ("this module's commands" if own is not None else "any roofline command"))
    assert not problems, "\n".join(problems)


# ---- the Python API speaks API --------------------------------------------------------------------------------------

def _no_cupy(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine without CuPy (the real message and its hint, which a GPU machine would not give)."""
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setattr(api, "_BACKENDS", {})
    monkeypatch.setattr(api, "_MACHINES", {})
    api._BACKENDS.clear()
    api._MACHINES.clear()


def _noop() -> None:
    return None


API_ERRORS = {
    "no GPU": (api.measure, (_noop,), {"flops": 1, "bytes": 1}),
    "no GPU, results": (api.results, ([],), {}),
    "no GPU, backend": (api.backend, ("cupy", 0), {}),
    "unknown backend": (api.measure, (_noop,), {"flops": 1, "bytes": 1, "backend": "cuda"}),
    "bad device": (api.backend, ("numpy", -1), {}),
    "unknown spec": (api.measure, (_noop,), {"flops": 1, "bytes": 1, "spec": "no-such-gpu", "backend": "numpy"}),
    "unknown spec, analyze": (api.analyze, (), {"flops": 1, "bytes": 1, "spec": "no-such-gpu"}),
    "kernels path": (api.measure, (_noop,), {"descriptor": "vector_add", "kernels": ["/no/such/kernels"],
                                             "backend": "numpy"}),
    "unknown parameter": (api.measure, (_noop,), {"descriptor": "vector_add", "params": {"bogus": 1},
                                                  "backend": "numpy"}),
    "bad formula": (api.analyze, (), {"descriptor": "vector_add", "params": {"n": "2**"}}),
    "unknown roof": (api.measure, (_noop,), {"flops": 1, "bytes": 1, "roof": "fp7", "spec": "h100",
                                             "backend": "numpy"}),
    "min_time": (api.measure, (_noop,), {"flops": 1, "bytes": 1, "min_time": -1.0, "backend": "numpy"}),
}
KEYWORD = re.compile(r"(?<![\w.'\"{])([a-z_]+)=(?!=)")


def _keywords(fn: Any) -> set[str]:
    """The keyword arguments `fn` takes (analyze's **model: those of workload)."""
    names = set(inspect.signature(fn).parameters)
    if "model" in names:
        names |= set(inspect.signature(api.workload).parameters)
    return names


@pytest.mark.parametrize("case", sorted(API_ERRORS))
def test_the_apis_errors_name_its_keywords_not_command_line_options(case, monkeypatch):
    _no_cupy(monkeypatch)
    fn, args, kwargs = API_ERRORS[case]
    with pytest.raises(RooflineError) as info:
        fn(*args, **kwargs)
    message = info.value.message
    assert info.value.message == str(info.value)
    bare = OPTION.findall(QUOTED.sub("", message)) + re.findall(r"(?<![\w-])-p\b", QUOTED.sub("", message))
    assert not bare, f"{case}: {message}"
    named = {k for k in KEYWORD.findall(message) if k in _keywords(api.measure) | _keywords(api.results)}
    assert named <= _keywords(fn), f"{case}: {message}"


def test_the_no_gpu_hint_of_the_api_is_what_the_api_takes(monkeypatch):
    """The hint says backend="numpy"; doing what it says measures on the host."""
    import numpy as np

    _no_cupy(monkeypatch)
    with pytest.raises(BackendUnavailable) as info:
        api.measure(_noop, flops=1, bytes=1)
    assert 'backend="numpy"' in info.value.message and "--backend" not in info.value.message
    keyword, value = re.search(r'\b(backend)="(\w+)"', info.value.message).groups()
    a = np.ones(1024, dtype=np.float32)
    result = api.measure(lambda: a + a, flops=a.size, bytes=3 * a.nbytes, min_time=0.0, min_repeats=2,
                         **{keyword: value})
    assert result.status == "OK"


@pytest.mark.parametrize("cli_words, api_words", [
    ("or run the NumPy references on the host CPU with --backend numpy", 'with backend="numpy"'),
    ("close other work on the device or raise --min-time", "raise min_time="),
    ("--device 3: there are 2 CUDA devices", "device=3: there are"),
    ("-p n=x: syntax error", "params={'n': 'x'}: syntax error"),
    ("give --spec the GPU that ran", "give spec= the GPU"),
    ("measure again with --spec, e.g. 'roofline measure --backend numpy --spec h100'",
     "with spec=, e.g. 'roofline measure --backend numpy --spec h100'"),
])
def test_command_line_words_become_api_words(cli_words, api_words):
    assert api_words in in_api_words(cli_words)


# ---- the plugin speaks plugin ---------------------------------------------------------------------------------------

pytest_plugins = ["pytester"]


def test_the_plugins_skip_reason_names_its_own_option(pytester):
    pytester.makepyfile(test_user="""
import numpy as np

def test_add(roofline_check):
    a = np.ones(8, dtype=np.float32)
    roofline_check(lambda: a + a, name="add", flops=8, bytes=96, check=lambda: True)

def test_add_on_the_gpu_asked(roofline_check):
    a = np.ones(8, dtype=np.float32)
    roofline_check(lambda: a + a, name="add2", flops=8, bytes=96, check=lambda: True, backend="cupy")

def test_unknown_spec(roofline_check):
    a = np.ones(8, dtype=np.float32)
    roofline_check(lambda: a + a, name="add3", flops=8, bytes=96, check=lambda: True, backend="numpy")
""")
    pytester.makeconftest("import sys\nsys.modules['cupy'] = None  # as on a machine without CuPy\n")
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", "-rsf", "--roofline-spec", "no-such-gpu")
    result.assert_outcomes(skipped=2, failed=1)
    text = result.stdout.str()
    skipped = [line for line in text.splitlines() if line.startswith("SKIPPED")]
    assert any("--roofline-backend numpy" in line for line in skipped), text  # the plugin chose the backend
    assert any('backend="numpy"' in line for line in skipped), text  # the test chose it: the keyword it gave
    assert "--backend numpy" not in text
    assert "--roofline-spec: no spec named 'no-such-gpu'" in text
    mentioned = set(re.findall(r"--roofline-[a-z-]+", text))
    assert mentioned and mentioned <= _plugin_options()


# ---- install hints --------------------------------------------------------------------------------------------------

PIP = re.compile(r"pip install ((?:-e )?(?:'[^']+'|\"[^\"]+\"|[\w.\[\],-]+)(?: or [\w.-]+| / [\w.-]+)?)")
# what a hint may name besides our distribution and its dependencies: packages pyproject.toml does not list
THIRD_PARTY = {"ml_dtypes": "NumPy's bfloat16 and float8 (measurement/implementation.py)",
               "nvidia-nccl-cu12": "NCCL for CuPy (fleet links)"}


def _install_hints() -> list[tuple[str, str]]:
    out = []
    for path in _sources():
        for line, text, _ in _strings(path):
            for match in re.finditer(r"pip install [^;()]*", text):
                if "{}" in match.group(0):  # built at run time: test_the_raised_install_hints_read_as_the_source_says
                    continue
                out.append((f"{path.relative_to(PACKAGE.parent)}:{line}", match.group(0)))
    return out


def _requirement_names() -> set[str]:
    names = set()
    for req in PYPROJECT["project"]["dependencies"] + sum(PYPROJECT["project"]["optional-dependencies"].values(), []):
        names.add(re.split(r"[<>=!~\[; ]", req, maxsplit=1)[0].lower())
    return names


def check_install_hint(hint: str) -> list[str]:
    """What is wrong with one `pip install ...` hint: our distribution asked of an index (by its own name or by
    'roofline'), an extra pyproject.toml does not define, a package that is neither a dependency nor a known one."""
    name = PYPROJECT["project"]["name"]
    extras = set(PYPROJECT["project"]["optional-dependencies"])
    problems = []
    words = hint.replace("{}", "X").split()[2:]
    for word in words:
        word = word.strip("'\"`,")
        if word in ("-e", "or", "/", "") or not re.match(r"[\w.]", word):
            continue
        if "(" in word or word in ("in", "the", "with", "and", "for", "CUDA", "12", "13", "a", "it", "same"):
            break
        dist, _, rest = word.partition("[")
        wanted = set(rest.rstrip("]").split(",")) if rest else set()
        if dist == ".":
            problems += [f"{hint}: no extra '{e}' in pyproject.toml" for e in wanted - extras]
            if name not in hint:
                problems.append(f"{hint}: say whose checkout ({name})")
        elif dist in (name, "roofline") or wanted:
            problems.append(f"{hint}: '{dist}' from an index is not this project ({name} is installed from its "
                            "checkout: pip install -e '.[extra]')")
        elif dist.lower() not in _requirement_names() and dist not in THIRD_PARTY and not dist.startswith("-cu"):
            problems.append(f"{hint}: '{dist}' is neither a dependency in pyproject.toml nor a known package")
    return problems


def test_every_install_hint_names_the_published_distribution_and_real_extras():
    hints = _install_hints()
    assert len(hints) >= 6
    problems = [f"{where}: {p}" for where, hint in hints for p in check_install_hint(hint)]
    assert not problems, "\n".join(problems)


def test_the_install_hint_check_can_fail():
    assert check_install_hint("pip install -e '.[mpi]' in the gpu-roofline checkout") == []
    assert check_install_hint("pip install cupy-cuda12x") == []
    assert check_install_hint("pip install 'roofline[mpi]'")[0].startswith("pip install 'roofline[mpi]': 'roofline' "
                                                                           "from an index is not this project")
    assert check_install_hint("pip install 'gpu-roofline[cuda12]'")
    assert check_install_hint("pip install -e '.[cuda11]' in the gpu-roofline checkout") == [
        "pip install -e '.[cuda11]' in the gpu-roofline checkout: no extra 'cuda11' in pyproject.toml"]
    assert check_install_hint("pip install cupyy")


def test_the_raised_install_hints_read_as_the_source_says():
    """The hints as they are built at run time (f-strings the scan sees with holes): each checked too."""
    from roofline.errors import install_extra
    from roofline.measurement.backend_cupy import CUPY_INSTALL, INSTALL_HINT
    from roofline.measurement.gpustate import INSTALL_HINT as NVML_HINT

    for text in (install_extra("mpi"), install_extra("cuda13"), CUPY_INSTALL, INSTALL_HINT, NVML_HINT):
        for match in re.finditer(r"pip install [^;()]*", text):
            assert check_install_hint(match.group(0)) == [], text
    assert "cupy-cuda12x" in CUPY_INSTALL and "gpu-roofline checkout" in CUPY_INSTALL
