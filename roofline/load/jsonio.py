"""JSON text and the one writer behind every -o: nothing half-written, nothing replaced that must not be.

write_text_atomic is what `-o PATH` means for every command:
- `-` is standard output (text or bytes);
- a missing or regular file is written to a temporary file in the same folder, flushed to disk (fsync) and renamed
  into place, so a reader never sees half a file; a new file gets the mode the umask gives (created 0666 & ~umask
  by the kernel, like any program's output), an existing one keeps its mode;
- a symlink to a file (or a dangling one) is refused: writing through it would replace a file somewhere else, and
  replacing the link would silently turn the user's link into a file; the message names the link's target;
- one of this process's own streams (/dev/stdout, /dev/stderr, /dev/fd/N) is written to as that descriptor,
  wherever the shell pointed it (`-o /dev/stdout > log` fills log as `> log` set it up);
- anything else that exists (a FIFO, a character device such as /dev/null, or a link to one) is opened and written
  to, never replaced: roofline must not turn /dev/null into a regular file when run as root;
- a folder is refused.
The temporary file is removed on every failure, KeyboardInterrupt, SIGTERM and SIGHUP included (while it is written
they raise, so the clean-up runs, and are then delivered again with their default action); the rename itself holds
those signals back for its instant, and a file renamed into place is recorded in WRITTEN, so an interrupt that
lands after it is reported as coming after a complete write, not as an abort.

why_not_replace says whether an existing file may be replaced by what a command writes (a results document only
replaces a document of its own kind made by the same kind of run: a measurement, a PyTorch import, an Nsight
Compute import or a prediction (document_writes); a figure only a figure of its format; nothing replaces a
roofline document of another kind); the CLI asks it unless --force is given. same_file says whether two paths name one file.
"""

from __future__ import annotations

import contextlib
import errno
import json
import math
import os
import re
import secrets
import signal
import stat
import sys
import threading
from pathlib import Path
from collections.abc import Callable, Iterator
from typing import Any, Union

from roofline.model.units import MAX_DIGITS

STDOUT = "-"


_LONGEST = 10**MAX_DIGITS  # the reader (roofline.load.inputs.parse_json) refuses a whole number this long


def _clean(value: Any) -> Any:
    """JSON has no inf/NaN: write them as null rather than emit invalid JSON. A whole number longer than the reader
    takes (a figure of 300 digits) is written as the float it approximates, or null past a float's range, so no file
    this writes is one its own reader refuses."""
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) >= _LONGEST:
        try:
            return float(value)
        except OverflowError:
            return None
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    return value


def fast_json() -> Any:
    """orjson (a dependency), imported on first use rather than at start-up; None where it is missing, so every
    caller keeps the standard library's way."""
    try:
        import orjson  # lazy: only JSON reading and writing use it, not a table (start-up)
    except ImportError:
        return None
    return orjson


def dump_bytes(doc: Any) -> bytes:
    """Two-space indented JSON as UTF-8, inf and NaN as null, ending in a newline. orjson writes a long trace's
    results in a second where the standard encoder takes half a minute (it indents in Python), and as bytes, so no
    second copy of a 100 MB text is made; what orjson refuses (an integer past 64 bits, a lone surrogate, a type it
    does not know) is written by the standard encoder. The two differ only in how an exponent is spelled (1e-05
    against 0.00001): the same numbers."""
    orjson = fast_json()
    if orjson is not None:
        try:
            return orjson.dumps(doc, option=orjson.OPT_INDENT_2 | orjson.OPT_NON_STR_KEYS | orjson.OPT_APPEND_NEWLINE)
        except orjson.JSONEncodeError:
            pass
    return encode(json.dumps(_clean(doc), indent=2, ensure_ascii=False, allow_nan=False) + "\n")


def dumps(doc: Any) -> str:
    """dump_bytes as text."""
    return dump_bytes(doc).decode("utf-8")


def encode(data: str | bytes) -> bytes:
    """UTF-8; a lone surrogate (JSON's "\\ud800" decodes to one) is written as its \\uXXXX escape, not a crash."""
    return data.encode("utf-8", "backslashreplace") if isinstance(data, str) else bytes(data)


Data = Union[str, bytes, Iterator[bytes]]  # an iterator: a text too big to hold, written chunk by chunk


def _payload(data: Data) -> bytes | Iterator[bytes]:
    return data if isinstance(data, Iterator) else encode(data)


def _write_all(write: Callable[[bytes], Any], payload: bytes | Iterator[bytes]) -> None:
    for chunk in ([payload] if isinstance(payload, bytes) else payload):
        write(chunk)


def write_stdout(data: Data) -> None:
    """Text or bytes to standard output, through its byte stream so binary output (a PNG) survives."""
    payload = _payload(data)
    sys.stdout.flush()
    buffer = getattr(sys.stdout, "buffer", None)
    if buffer is None:  # a replaced sys.stdout without bytes: text only
        _write_all(lambda chunk: sys.stdout.write(chunk.decode("utf-8")), payload)
    else:
        _write_all(buffer.write, payload)
        buffer.flush()
    sys.stdout.flush()


def write_text_atomic(path: Path | str, data: Data) -> None:
    """Write data to path as described in the module docstring; OSError (with strerror) when it cannot. `data`
    may be an iterator of bytes (consumed once), for a text written as it is made."""
    if str(path) == STDOUT or own_stream(path) == 1:
        write_stdout(data)
        return
    fd = own_stream(path)
    if fd is not None:  # /dev/stderr, /dev/fd/3: written where the shell pointed it, as a redirection would be
        for chunk in ([_payload(data)] if not isinstance(data, Iterator) else data):
            view = memoryview(chunk if isinstance(chunk, bytes) else encode(chunk))
            while view:
                view = view[os.write(fd, view):]
        return
    path = Path(path)
    link = symlink_refusal(path)
    if link is not None:
        raise OSError(errno.ELOOP, link, str(path))
    payload = _payload(data)
    try:
        st: os.stat_result | None = os.stat(path)  # a link here leads to a FIFO or device (/dev/stdout)
    except FileNotFoundError:
        st = None  # a new file
    if st is not None and stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(errno.EISDIR, "it is a folder; give a file name", str(path))
    if st is not None and not stat.S_ISREG(st.st_mode):
        if _write_in_place(path, payload):
            return
        st = os.stat(path)
    # renamed over the name itself, never its link's target: a link swapped in since the check is replaced, not
    # written through
    _replace_atomically(path, payload, None if st is None else stat.S_IMODE(st.st_mode))


_STREAM = re.compile(r"^/(?:dev/fd|proc/self/fd)/(\d+)$")


def own_stream(path: Path | str) -> int | None:
    """The file descriptor `path` names when it is one of this process's own open files (/dev/stdout, /dev/stderr,
    /dev/fd/N, /proc/self/fd/N), else None: those are written as the descriptor, whatever it is open on (a pipe, or
    the regular file `> log` made), never replaced or written through a link."""
    text = str(path)
    fd = {"/dev/stdin": 0, "/dev/stdout": 1, "/dev/stderr": 2}.get(text)
    match = _STREAM.match(text)
    if match is not None:
        fd = int(match.group(1))
    if fd is None or fd == 0:
        return None
    try:
        os.fstat(fd)
    except OSError:
        return None
    return fd


def symlink_refusal(path: Path | str) -> str | None:
    """Why `path`, a symbolic link, is not written (None when it is not a link, or leads to a FIFO or device that is
    written in place, as /dev/stdout is)."""
    if not os.path.islink(path) or own_stream(path) is not None:
        return None
    try:
        if not stat.S_ISREG(os.stat(path).st_mode):
            return None
    except OSError:  # dangling, or a loop
        pass
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    return (f"it is a symbolic link (to {target}); roofline never writes through a link nor replaces one: give "
            "the target's path, or remove the link")


def same_file(a: Path | str, b: Path | str) -> bool:
    """Whether two paths name one file: the same inode when both exist (symlinks, '..', hard links), else the same
    resolved path."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return os.path.realpath(a) == os.path.realpath(b)
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


HEAD_BYTES = 64 << 10  # how much of an existing file is read to tell what it is
# the top-level "schema" of a JSON object (or of the first of a list of them: analyze's several specs), after
# any plain keys before it (roofline writes it first)
# (a plain value has no spaces inside, so each key and value can match one way only: no backtracking blow-up)
_SCHEMA = re.compile(rb'^\s*\[?\s*\{\s*(?:"[^"]*"\s*:\s*(?:"[^"]*"|[^,{}\[\]"\s]+)\s*,\s*)*?'
                     rb'"schema"\s*:\s*"(roofline/[A-Za-z0-9_.-]+)/v\d+"')
_FIGURES = {"png": "a PNG image", "pdf": "a PDF document", "svg": "an SVG image", "html": "an HTML page"}


def _family(schema: str) -> str:
    """'roofline/results/v1' -> 'roofline/results': documents of one kind, any version."""
    return re.sub(r"/v\d+$", "", schema)


def _is_figure(fmt: str, head: bytes) -> bool:
    low = head.lstrip().lower()
    if fmt == "png":
        return head.startswith(b"\x89PNG\r\n\x1a\n")
    if fmt == "pdf":
        return head.startswith(b"%PDF-")
    if fmt == "svg":
        return (low.startswith(b"<?xml") or low.startswith(b"<svg")) and b"<svg" in low
    return low.startswith(b"<!doctype html") or low.startswith(b"<html")


# who made a results file, from its top-level backend: what one kind of run wrote, another must not replace unasked
# (a GPU measurement is the expensive kind: `import torch -o m.json` silently replaced one)
PRODUCERS = {"torch": "a PyTorch trace import ('import torch', 'profile --with torch')",
             "ncu": "an Nsight Compute import or profile ('import ncu', 'profile')",
             "model": "a prediction from the model ('analyze --predict', 'sweep --predict')"}
MEASUREMENT = "measurement"  # any other backend (cupy, numpy, ...): 'measure', 'sweep', the API
_MEASURED_WORDS = "a measurement ('measure', 'sweep', roofline.measure)"
_BACKEND = re.compile(rb'"backend"\s*:\s*"([A-Za-z0-9_.-]{1,40})"')
RESULTS_FAMILY = "roofline/results"


def producer_of(backend: str | None) -> str:
    """The kind of run a results file's backend names: 'torch', 'ncu', 'model' or 'measurement'."""
    return backend if backend in PRODUCERS else MEASUREMENT


def document_writes(doc: Any) -> str:
    """What `doc` is, for why_not_replace: its schema, and for a results document who made it
    ('roofline/results/v1@torch'); a list of documents (analyze's several specs) is what its first is."""
    first = doc[0] if isinstance(doc, list) and doc else doc
    if not isinstance(first, dict) or not isinstance(first.get("schema"), str):
        return "text"
    schema, backend = first["schema"], first.get("backend")
    if _family(schema) == RESULTS_FAMILY and isinstance(backend, str):
        return f"{schema}@{producer_of(backend)}"
    return schema


def _producer_words(producer: str) -> str:
    return PRODUCERS.get(producer, _MEASURED_WORDS)


def why_not_replace(path: Path | str, writes: str) -> str | None:
    """Why the existing file at `path` must not be replaced by what a command writes, or None (absent, empty, not
    a regular file, one of this process's streams, or of the same kind). `writes`: a document's schema
    ('roofline/results/v1', with '@PRODUCER' for a results document whose maker is known: document_writes), 'figure:FMT'
    (png, svg, pdf, html), 'measured-spec' (calibrate's YAML), or 'text' (tables, reports: anything but a
    roofline document may be replaced)."""
    if str(path) == STDOUT or own_stream(path) is not None:
        return None
    try:
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode) or st.st_size == 0:
            return None
        with open(path, "rb") as handle:
            head = handle.read(HEAD_BYTES)
    except OSError:
        return None  # absent or unreadable: the writer says what is wrong, if anything
    found = _SCHEMA.match(head)
    family = _family(found.group(1).decode()) if found else None
    writes, _, producer = writes.partition("@")
    if writes.startswith("roofline/"):
        want = _family(writes)
        if family == want:
            had = _BACKEND.search(head) if producer and family == RESULTS_FAMILY else None
            if had is not None and producer_of(had.group(1).decode()) != producer:
                old = producer_of(had.group(1).decode())
                return (f"it is a results file of {_producer_words(old)}, and this writes one of "
                        f"{_producer_words(producer)} (a results file is replaced only by one from the same kind of "
                        "run)")
            return None
        what = f"a {family} document" if family else "a file that is not a roofline document"
        return f"it is {what}, and this writes a {want} document (roofline replaces only its own {want} files)"
    if family is not None:
        return f"it is a {family} document, and this writes {writes.split(':')[-1]}"
    if writes == "measured-spec":
        if not re.search(rb"^measured:\s*true\s*(#.*)?$", head, re.MULTILINE):
            return ("it is not a measured spec (no 'measured: true'), and this writes one (a measured spec replaces "
                    "only a measured spec, never a datasheet)")
        return None
    if writes.startswith("figure:"):
        fmt = writes.split(":", 1)[1]
        if fmt in _FIGURES and not _is_figure(fmt, head):
            return f"it is not {_FIGURES[fmt]}, and this writes one (a figure replaces only a figure of its format)"
    return None


def _write_in_place(path: Path, payload: bytes | Iterator[bytes]) -> bool:
    """Write into a FIFO or device as a shell redirection would (no O_TRUNC, no O_CREAT, no rename).

    False when what was opened turned out to be a regular file after all (swapped since the stat): the
    caller then replaces it atomically instead of overwriting it in place."""
    fd = os.open(path, os.O_WRONLY | getattr(os, "O_CLOEXEC", 0))  # a FIFO blocks here until a reader opens it
    with os.fdopen(fd, "wb") as handle:
        if stat.S_ISREG(os.fstat(fd).st_mode):
            return False  # nothing of the payload was consumed
        _write_all(handle.write, payload)
        handle.flush()
    return True


def _create_beside(target: Path) -> tuple[int, Path]:
    """A new temporary file in the target's folder, created 0666 so the kernel applies the umask (and any
    default ACL) exactly as it would to the target itself."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = target.with_name(f".{target.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(tmp, flags, 0o666), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(target.parent))


WRITTEN: list[str] = []  # the files this process replaced completely: an interrupt after a rename names them


class _Signalled(BaseException):
    """SIGTERM or SIGHUP arrived while a temporary file was written: raised so that it is removed."""

    def __init__(self, signum: int):
        super().__init__(signum)
        self.signum = signum


_ENDING = ("SIGTERM", "SIGHUP")  # their default ends the process where it stands, the temporary file left behind
_HELD = ("SIGINT", "SIGTERM", "SIGHUP")  # held back for the instant of the rename


@contextlib.contextmanager
def _signals_remove_the_temporary() -> Iterator[None]:
    """While the temporary file is written, SIGTERM and SIGHUP raise _Signalled (so the `except` that removes it
    runs) instead of ending the process on the spot; SIGINT already raises KeyboardInterrupt. Only in the main
    thread (where Python runs handlers), and only for a signal at its default: one ignored (SIGHUP under nohup) or
    handled by someone else (profile's SIGTERM) is left as it is."""
    previous: dict[int, Any] = {}
    if threading.current_thread() is threading.main_thread():
        def raise_signalled(signum: int, _frame: Any) -> None:
            raise _Signalled(signum)

        for name in _ENDING:
            number = getattr(signal, name, None)
            if number is not None and signal.getsignal(number) == signal.SIG_DFL:
                previous[number] = signal.signal(number, raise_signalled)
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def _rename_into_place(tmp: Path, target: Path) -> None:
    """os.replace with SIGINT, SIGTERM and SIGHUP held back for its instant, so the file is either not replaced
    (the temporary is removed) or replaced and recorded in WRITTEN before any of them is acted on."""
    held = {getattr(signal, name) for name in _HELD if hasattr(signal, name)}
    can_hold = hasattr(signal, "pthread_sigmask")
    if can_hold:
        old = signal.pthread_sigmask(signal.SIG_BLOCK, held)
    try:
        os.replace(tmp, target)
        WRITTEN.append(str(target))
    finally:
        if can_hold:
            signal.pthread_sigmask(signal.SIG_SETMASK, old)


def _replace_atomically(target: Path, payload: bytes | Iterator[bytes], keep_mode: int | None) -> None:
    fd, tmp = _create_beside(target)
    try:
        with _signals_remove_the_temporary():
            try:
                with os.fdopen(fd, "wb") as handle:
                    if keep_mode is not None:
                        os.fchmod(handle.fileno(), keep_mode)
                    _write_all(handle.write, payload)
                    handle.flush()
                    os.fsync(handle.fileno())
                _rename_into_place(tmp, target)
                _sync_folder(target.parent)
            except BaseException:
                try:
                    os.unlink(tmp)
                except FileNotFoundError:
                    pass
                raise
    except _Signalled as exc:
        # the temporary file is gone and the handler is the default again: the signal now ends the process as it
        # would have (status 128 + its number), and only returns if something else handles it
        signal.raise_signal(exc.signum)
        raise KeyboardInterrupt from None


def _sync_folder(folder: Path) -> None:
    """Flush the rename itself to disk, so a crash after it leaves the new file, not an empty name (best effort:
    some filesystems cannot open a folder for this)."""
    try:
        fd = os.open(folder if str(folder) else ".", os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def write_json_atomic(path: Path, doc: Any) -> None:
    write_text_atomic(path, dumps(doc))


def cannot_write(path: Path | str) -> str | None:
    """Why write_text_atomic(path, ...) would fail, or None: asked before the work, so a long run never ends in a
    write that fails. What it checks is what the writer needs: not a folder; a FIFO or device writable in place;
    otherwise (a new file, a regular one, a symlink's target) a folder that exists and that we may create files in."""
    if str(path) == STDOUT or own_stream(path) is not None:
        return None
    path = Path(path)
    link = symlink_refusal(path)
    if link is not None:
        return link
    try:
        st: os.stat_result | None = os.stat(path)
    except FileNotFoundError:
        st = None
    except NotADirectoryError:
        return "a part of its path is a file, not a folder"
    except OSError as exc:  # a symlink loop, no permission to look
        return exc.strerror or str(exc)
    if st is not None and stat.S_ISDIR(st.st_mode):
        return "it is a folder; give a file name"
    if st is not None and not stat.S_ISREG(st.st_mode):
        return None if os.access(path, os.W_OK) else "permission denied"
    folder = Path(os.path.realpath(path)).parent
    if not folder.exists():
        return f"the folder {folder} does not exist"
    if not folder.is_dir():
        return f"{folder} is not a folder"
    if not os.access(folder, os.W_OK | os.X_OK):
        return f"the folder {folder} is not writable"
    return None
