"""The one reader for every input file (specs, descriptors, results, baselines, gates, ncu CSV, sweeps).

Files in CI come from pull requests, so nothing here trusts its input: only regular files are read (a FIFO would
block, /dev/zero would never end), never more than the size limit plus one byte, no stat, open or read waited on
for more than READ_STALL seconds (a /proc file or a hung mount is a regular file that blocks: input_chunks), UTF-8
or a clear message; YAML without anchors or aliases (a few hundred bytes of aliases expand to gigabytes) nor
duplicate keys (YAML keeps the last silently, so a second `bandwidth:` would replace the first unseen) and JSON,
both at most MAX_DEPTH levels deep, with whole numbers of at most MAX_DIGITS digits and finite floats. Every refusal
is one InputError naming the file (and the line, where there is one).
"""

from __future__ import annotations

import contextlib
import math
import os
import queue
import stat
import threading
from pathlib import Path
from typing import Any, Callable, Iterator

from roofline.errors import InputError, at, first_line
from roofline.model.units import MAX_DIGITS
from roofline.load.yamlmemo import MISSING, lookup as memoised
import json

MAX_DEPTH = 64  # levels of nested lists and mappings; real inputs use fewer than ten

_OPEN_FLAGS = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0) | getattr(os, "O_CLOEXEC", 0)


def _not_regular(mode: int) -> str | None:
    """What a non-regular file is, in words; None for a regular file."""
    if stat.S_ISREG(mode):
        return None
    for test, words in ((stat.S_ISDIR, "a folder"), (stat.S_ISFIFO, "a FIFO (named pipe)"),
                        (stat.S_ISCHR, "a character device"), (stat.S_ISBLK, "a block device"),
                        (stat.S_ISSOCK, "a socket")):
        if test(mode):
            return words
    return "not a regular file"


@contextlib.contextmanager
def _opening(path: Path) -> Iterator[None]:
    """The OS errors of opening and statting `path` as one InputError naming it (exit 2, never a traceback)."""
    try:
        yield
    except FileNotFoundError:
        raise at(path, None, "no such file") from None
    except PermissionError:
        raise at(path, None, "cannot read: permission denied") from None
    except (OSError, ValueError) as exc:  # ValueError: a NUL byte in the path
        raise at(path, None, f"cannot read: {getattr(exc, 'strerror', None) or exc}") from None


def _refuse_not_regular(path: Path, what: str | None, kind: str) -> None:
    """A folder, FIFO, device or socket where a file of `kind` was expected: refused, naming what it is."""
    if what == "a folder":
        raise at(path, None, f"is a folder, expected {kind}")
    if what is not None:
        raise at(path, None, f"is {what}, not a regular file; expected {kind}")


READ_STALL = 10.0  # seconds one call on an input (stat, open, a read) may block before the file is refused
CHUNK = 1 << 20  # bytes asked of the file at a time


class _Worker:
    """The thread every call on an input file runs on (stat, open, each read), so one that blocks is given up
    after READ_STALL seconds instead of hanging the command: a regular file can still block (/proc/kmsg, a hung
    NFS or FUSE mount). A worker stuck in such a call is abandoned (a daemon thread: it does not hold the process
    open) and the next call starts a fresh one."""

    def __init__(self) -> None:
        self.jobs: "queue.SimpleQueue[tuple[Callable[[], Any], queue.SimpleQueue[tuple[Any, BaseException | None]]]]"
        self.jobs = queue.SimpleQueue()
        self.thread = threading.Thread(target=self._run, name="roofline-input", daemon=True)
        self.thread.start()

    def _run(self) -> None:
        while True:
            call, answer = self.jobs.get()
            try:
                answer.put((call(), None))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, which raises it in its own thread
                answer.put((None, exc))


_worker: _Worker | None = None
_worker_lock = threading.Lock()


def _forget_worker() -> None:
    """In a forked child the worker thread is gone (only the forking thread survives): start a fresh one."""
    global _worker, _worker_lock
    _worker, _worker_lock = None, threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_worker)


class _Stalled(Exception):
    """A call given up on. A descriptor it was reading stays open, owned by the abandoned worker (closing it would
    let the next file opened take its number, and the worker's read, once it wakes, take that file's data)."""

    def __init__(self, error: InputError):
        super().__init__(error.message)
        self.error = error


def _within(stall: float, path: Path, kind: str, call: Callable[[], Any]) -> Any:
    """call() on the worker thread; its exception re-raised here; _Stalled naming the file when it does not
    return within `stall` seconds."""
    global _worker
    with _worker_lock:
        if _worker is None:
            _worker = _Worker()
        worker = _worker
    answer: "queue.SimpleQueue[tuple[Any, BaseException | None]]" = queue.SimpleQueue()
    worker.jobs.put((call, answer))
    try:
        value, error = answer.get(timeout=stall)
    except queue.Empty:
        with _worker_lock:
            if _worker is worker:
                _worker = None  # stuck in the kernel: left behind, a new one takes the next call
        raise _Stalled(at(path, None, f"did not answer within {stall:g} s (a file that blocks: a device, a /proc "
                                      f"file or a hung network mount); expected {kind}")) from None
    if error is not None:
        raise error
    return value


def _read_within(fd: int, size: int, path: Path, kind: str, stall: float) -> bytes:
    """os.read(fd, size) within `stall` seconds, or one InputError naming the file (it would block: O_NONBLOCK on
    a /proc file with nothing to give; it cannot be read)."""
    try:
        return _within(stall, path, kind, lambda: os.read(fd, size))
    except BlockingIOError:
        raise at(path, None, f"blocks on read (it is not a file of data: a /proc or device file); expected "
                             f"{kind}") from None
    except OSError as exc:
        raise at(path, None, f"cannot read: {exc.strerror or exc}") from None


def input_chunks(path: object, max_bytes: int, kind: str, stall: float | None = None) -> Iterator[bytes]:
    """The bytes of a regular file of at most max_bytes, a piece (at most CHUNK bytes) at a time, each call on it
    (stat, open, each read) given at most `stall` seconds (READ_STALL): the one bounded reader every input goes
    through. One InputError naming the file when it is not a regular file, is larger, blocks, or cannot be read.

    The type is checked before opening (opening some devices has effects) and again on the open descriptor
    (the path may have been swapped in between); the size is enforced by reading at most max_bytes + 1 bytes,
    never by trusting st_size. O_NONBLOCK makes opening a FIFO return at once instead of waiting for a writer.
    """
    path = Path(str(path))
    stall = READ_STALL if stall is None else stall

    def open_regular() -> tuple[int, str | None]:
        what = _not_regular(os.stat(path).st_mode)
        if what is not None:
            return -1, what
        fd = os.open(path, _OPEN_FLAGS)
        try:
            return fd, _not_regular(os.fstat(fd).st_mode)
        except BaseException:
            os.close(fd)
            raise

    try:
        with _opening(path):
            fd, what = _within(stall, path, kind, open_regular)
    except _Stalled as stalled:
        raise stalled.error from None
    try:
        _refuse_not_regular(path, what, kind)
        total = 0
        while True:
            try:
                chunk = _read_within(fd, min(CHUNK, max_bytes + 1 - total), path, kind, stall)
            except _Stalled as stalled:
                fd = -1  # left to the worker still reading it
                raise stalled.error from None
            if not chunk:
                return
            total += len(chunk)
            if total > max_bytes:
                raise at(path, None, f"file is larger than {max_bytes} bytes, the most {kind} may be")
            yield chunk
    finally:
        if fd >= 0:
            os.close(fd)


def read_input_bytes(path: object, max_bytes: int, kind: str) -> bytes:
    """The bytes of a regular file of at most max_bytes (input_chunks, joined), or one InputError naming it."""
    return b"".join(input_chunks(path, max_bytes, kind))


def read_input_text(path: object, max_bytes: int, kind: str) -> str:
    """The UTF-8 text of a regular file of at most max_bytes (a leading byte-order mark is dropped)."""
    data = read_input_bytes(path, max_bytes, kind)
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        _refuse_gzip(path, data, kind)
        line = data.count(b"\n", 0, exc.start) + 1
        raise at(path, None, f"is not UTF-8 text (line {line}, byte {exc.start}); expected {kind}") from None


GZIP_MAGIC = b"\x1f\x8b"


def _refuse_gzip(path: object, head: bytes, kind: str) -> None:
    """A gzip file where text is expected is named as one (with the fix), not as text that is not UTF-8."""
    if head.startswith(GZIP_MAGIC):
        raise at(path, None, f"is gzip-compressed; decompress it first (gunzip -k {Path(str(path)).name}); "
                             f"expected {kind}")


# ---- YAML --------------------------------------------------------------------------------------------------


def _yaml_loader() -> type:
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    import yaml

    return getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml is ten times faster; same results


def parse_yaml(text: str, source: object) -> Any:
    """The data of one YAML document, checked node by node before any value is built.

    Composing the node graph is cheap even for an alias bomb (aliases share nodes); the walk refuses a node
    reached twice (an alias), nesting beyond MAX_DEPTH, whole numbers of more than MAX_DIGITS digits and
    non-finite floats, each with its line. Scalars with a non-string tag are built during the walk, so a bad
    date or number is reported at its line too; the loader keeps them for building the document.

    A bundled file's text is looked up first (roofline.load.yamlmemo: what it parses to, computed ahead), so
    `roofline analyze` imports no YAML parser.
    """
    known = memoised(text)
    if known is not MISSING:
        return known
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    import yaml

    loader_class = _yaml_loader()
    if not loader_class.__name__.startswith("C"):
        _check_depth_by_events(text, source, loader_class)
    loader = loader_class(text)
    try:
        try:
            node = loader.get_single_node()
            if node is None:
                return None
            _check_nodes(loader, node, source, text)
            return loader.construct_document(node)
        except yaml.MarkedYAMLError as exc:
            mark = exc.problem_mark or exc.context_mark
            where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark else ""
            problem = exc.problem or exc.context or "malformed"
            if "nesting depth" in problem and mark:  # libyaml's own limit (1000 levels) met before ours
                raise at(source, f"line {mark.line + 1}", f"is nested more than {MAX_DEPTH} levels deep") from None
            what = "YAML error" if isinstance(exc, yaml.constructor.ConstructorError) else "YAML syntax error"
            raise at(source, None, f"{what}: {where}{problem}") from None
        except yaml.YAMLError as exc:
            raise at(source, None, f"YAML syntax error: {first_line(exc)}") from None
        except RecursionError:  # the pure-Python composer recurses; libyaml stops at 1000 levels itself
            raise at(source, None, f"is nested more than {MAX_DEPTH} levels deep") from None
    finally:
        loader.dispose()


def _check_depth_by_events(text: str, source: object, loader_class: type) -> None:
    """Without libyaml: stop at MAX_DEPTH from the event stream, before the recursive pure-Python composer (whose
    scanner is also quadratic in flow depth: 1000 levels of '[' take seconds)."""
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    import yaml

    depth = 0
    try:
        for event in yaml.parse(text, Loader=loader_class):
            if isinstance(event, yaml.CollectionStartEvent):
                depth += 1
                if depth > MAX_DEPTH:
                    line = f"line {event.start_mark.line + 1}"
                    raise at(source, line, f"is nested more than {MAX_DEPTH} levels deep")
            elif isinstance(event, yaml.CollectionEndEvent):
                depth -= 1
    except yaml.YAMLError:
        return  # the loader reports syntax errors with their position


_STR_TAG = "tag:yaml.org,2002:str"
_INT_TAG = "tag:yaml.org,2002:int"
_FLOAT_TAG = "tag:yaml.org,2002:float"


def _check_nodes(loader: Any, root: Any, source: object, text: str) -> None:
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    import yaml

    seen: set[int] = set()
    stack: list[tuple[Any, int, str]] = [(root, 1, "")]  # node, depth, its dotted path (for messages)
    while stack:
        node, depth, where = stack.pop()
        line = node.start_mark.line + 1 if node.start_mark else 0
        if id(node) in seen:
            line = _first_alias_line(text) or line
            message = "YAML anchors and aliases (&name, *name) are not allowed; write the values out"
            raise at(source, f"line {line}", message)
        seen.add(id(node))
        if isinstance(node, yaml.ScalarNode):
            if node.tag != _STR_TAG:
                _check_scalar(loader, node, source, line)
            continue
        if depth > MAX_DEPTH:
            raise at(source, f"line {line}", f"is nested more than {MAX_DEPTH} levels deep")
        if isinstance(node, yaml.MappingNode):
            _refuse_duplicate_keys(node, source, where)
            for key, value in node.value:
                name = str(key.value)[:40] if isinstance(key, yaml.ScalarNode) else "?"
                stack.extend(((key, depth + 1, where), (value, depth + 1, f"{where}.{name}" if where else name)))
        else:
            stack.extend((child, depth + 1, f"{where}[{i}]") for i, child in enumerate(node.value))


def _refuse_duplicate_keys(node: Any, source: object, where: str) -> None:
    """A key written twice in one mapping: PyYAML keeps the last value without a word, so the first is lost."""
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    import yaml

    first: dict[tuple[str, str], int] = {}
    for key, _value in node.value:
        if not isinstance(key, yaml.ScalarNode):
            continue
        line = key.start_mark.line + 1 if key.start_mark else 0
        if (key.tag, key.value) in first:
            name = f"{where}.{key.value[:40]}" if where else key.value[:40]
            raise at(source, f"line {line}", f"duplicate key {name} (first at line {first[key.tag, key.value]}); "
                                             "YAML would keep only the last value, so remove one")
        first[key.tag, key.value] = line


def _first_alias_line(text: str) -> int | None:
    """The line of the first alias (*name): the node graph keeps only where its anchor was."""
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    import yaml

    for event in yaml.parse(text, Loader=_yaml_loader()):
        if isinstance(event, yaml.AliasEvent):
            return event.start_mark.line + 1
    return None


def _check_scalar(loader: Any, node: Any, source: object, line: int) -> None:
    # lazy: not needed by `roofline --help`, which imports this module (start-up)
    import yaml

    if node.tag == _INT_TAG and sum(c.isalnum() for c in node.value) > MAX_DIGITS + 2:  # + 2 for a 0x prefix
        raise at(source, f"line {line}", f"a whole number of more than {MAX_DIGITS} digits ({node.value[:20]}…)")
    try:
        value = loader.construct_object(node)
    except yaml.MarkedYAMLError:
        raise
    except Exception as exc:  # noqa: BLE001 - PyYAML's scalar builders raise anything: '!!bool x' is a KeyError
        detail = f" ({first_line(exc, 80)})" if isinstance(exc, ValueError) else ""  # 'month must be in 1..12'
        what = node.tag.rsplit(":", 1)[-1]
        raise at(source, f"line {line}", f"cannot read {node.value[:40]!r} as {what}{detail}") from None
    if node.tag == _FLOAT_TAG and isinstance(value, float) and not math.isfinite(value):
        raise at(source, f"line {line}", f"{node.value[:40]!r} is not a finite number")


def read_yaml(path: object, max_bytes: int, kind: str = "a YAML file") -> Any:
    """The data of a YAML file read through read_input_text and parse_yaml."""
    return parse_yaml(read_input_text(path, max_bytes, kind), path)


# ---- JSON --------------------------------------------------------------------------------------------------


class _NumberRefused(ValueError):
    def __init__(self, text: str, why: str):
        super().__init__(why)
        self.text = text


def _json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_DIGITS:
        raise _NumberRefused(text, f"a whole number of more than {MAX_DIGITS} digits")
    return int(text)


def _json_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise _NumberRefused(text, "a number out of the finite range")
    return value


def _json_constant(text: str) -> float:
    raise _NumberRefused(text, f"{text} is not JSON (write null for a missing number)")


def parse_json(text: str, source: object) -> Any:
    """A JSON document with finite numbers, whole numbers of at most MAX_DIGITS digits, at most MAX_DEPTH deep."""
    try:
        doc = json.loads(text, parse_int=_json_int, parse_float=_json_float, parse_constant=_json_constant)
    except json.JSONDecodeError as exc:
        raise at(source, None, f"is not valid JSON: line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except _NumberRefused as exc:
        line = text.count("\n", 0, max(text.find(exc.text), 0)) + 1
        raise at(source, f"line {line}", f"{exc} ({exc.text[:20]}{'…' if len(exc.text) > 20 else ''})") from None
    except RecursionError:
        raise at(source, None, f"is nested more than {MAX_DEPTH} levels deep") from None
    stack = [(doc, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, (dict, list)):
            if depth > MAX_DEPTH:
                raise at(source, None, f"is nested more than {MAX_DEPTH} levels deep")
            children = value.values() if isinstance(value, dict) else value
            stack.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))
    return doc


def read_json(path: object, max_bytes: int, kind: str = "a JSON file") -> Any:
    """The document of a JSON file read through read_input_text and parse_json."""
    return parse_json(read_input_text(path, max_bytes, kind), path)



def input_lines(path: object, max_bytes: int, kind: str) -> Iterator[str]:
    """The lines of a regular UTF-8 file of at most max_bytes, one at a time (split at \\n only, a \\r before it
    dropped, a leading byte-order mark dropped), read through input_chunks (its size, type and time bounds): a
    large capture is read without holding it. One InputError naming the file (and the line) when it cannot be."""
    path = Path(str(path))
    total = 0
    number = 0
    rest = b""

    def line_of(raw: bytes) -> str:
        try:
            line = raw.decode("utf-8-sig" if number == 1 else "utf-8")
        except UnicodeDecodeError as exc:
            if number == 1:
                _refuse_gzip(path, raw, kind)
            raise at(path, None, f"is not UTF-8 text (line {number}, byte {total + exc.start}); "
                                 f"expected {kind}") from None
        return line[:-1] if line.endswith("\r") else line

    for chunk in input_chunks(path, max_bytes, kind):
        rest += chunk
        start = 0
        while (end := rest.find(b"\n", start)) >= 0:
            number += 1
            yield line_of(rest[start:end])
            total += end + 1 - start
            start = end + 1
        rest = rest[start:]
    if rest:
        number += 1
        yield line_of(rest)
