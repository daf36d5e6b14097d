"""nccl-tests' conventions for collective bandwidth, as pure functions (NVIDIA/nccl-tests, doc/PERFORMANCE.md).

algbw = S / t, with S the size nccl-tests prints: the buffer each rank reduces (all-reduce), the whole gathered
buffer (all-gather: per-rank count x n), the whole buffer before scattering (reduce-scatter: per-rank count x n), or
the buffer each rank sends (send/recv, a ring: rank r sends to r+1 and receives from r-1). busbw = algbw x a factor
that makes the figure comparable with one link's speed in one direction whatever the number of ranks n:
2(n-1)/n for all-reduce, (n-1)/n for all-gather and reduce-scatter, 1 for send/recv.

The data each rank sends and what it must receive are defined here too, for any array module (NumPy or CuPy), so
every engine checks its result the same way before it may time it. Values are small integers in float32 (nccl-tests'
default type), so every sum is exact whatever order the reduction takes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from roofline.errors import InputError

ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, SEND_RECV = "all_reduce", "all_gather", "reduce_scatter", "send_recv"
COLLECTIVES = (ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, SEND_RECV)
LABELS = {ALL_REDUCE: "all-reduce", ALL_GATHER: "all-gather", REDUCE_SCATTER: "reduce-scatter",
          SEND_RECV: "send/recv"}
ITEMSIZE = 4  # float32
KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30
DEFAULT_MIN_BYTES = KiB
DEFAULT_MAX_BYTES = 4 * GiB
_REDUCE_PERIOD = 5  # reduce inputs are 1 + (rank + i) % 5: a sum over n ranks is at most 5n, exact below 2^24


def bus_factor(collective: str, ranks: int) -> float:
    """nccl-tests' correction from algorithm to bus bandwidth for `ranks` ranks (0 for a reduction on one rank:
    nothing crosses a link)."""
    if ranks < 1:
        raise ValueError(f"ranks must be at least 1, got {ranks}")
    if collective == ALL_REDUCE:
        return 2.0 * (ranks - 1) / ranks
    if collective in (ALL_GATHER, REDUCE_SCATTER):
        return (ranks - 1) / ranks
    if collective == SEND_RECV:
        return 1.0
    raise ValueError(f"unknown collective {collective!r}")


def algbw(size: float, seconds: float) -> float:
    """Algorithm bandwidth, B/s: nccl-tests' S / t."""
    if not seconds > 0:
        raise ValueError(f"a collective's time must be positive, got {seconds!r}")
    return size / seconds


def busbw(collective: str, size: float, seconds: float, ranks: int) -> float:
    """Bus bandwidth, B/s: algbw x bus_factor, the figure to set against a link's one-direction speed."""
    return algbw(size, seconds) * bus_factor(collective, ranks)


def parse_collectives(text: str) -> tuple[str, ...]:
    """'all' or a comma list of all_reduce, all_gather, reduce_scatter, send_recv (dashes accepted), in the order
    COLLECTIVES gives them."""
    if text.strip().lower() == "all":
        return COLLECTIVES
    wanted = []
    for part in text.split(","):
        name = part.strip().lower().replace("-", "_").replace("/", "_")
        if name not in COLLECTIVES:
            raise InputError(f"--collectives: unknown collective {part.strip()!r}; use all or a comma list of "
                             f"{', '.join(COLLECTIVES)}")
        wanted.append(name)
    return tuple(c for c in COLLECTIVES if c in wanted)


def sizes(min_bytes: int = DEFAULT_MIN_BYTES, max_bytes: int = DEFAULT_MAX_BYTES) -> tuple[int, ...]:
    """min_bytes, 2 x min_bytes, ... up to max_bytes (nccl-tests' -b MIN -e MAX -f 2)."""
    if min_bytes < ITEMSIZE:
        raise InputError(f"--min-bytes must be at least {ITEMSIZE} B (one float32), got {min_bytes} B")
    if max_bytes < min_bytes:
        raise InputError(f"--max-bytes ({max_bytes} B) is below --min-bytes ({min_bytes} B)")
    out, size = [], int(min_bytes)
    while size <= max_bytes:
        out.append(size)
        size *= 2
    return tuple(out)


@dataclass(frozen=True)
class Shape:
    """One collective at one size on n ranks: the elements each rank sends and receives, and S (`bytes`), the size
    nccl-tests divides by the time. A requested size that does not divide into whole float32 elements per rank is
    rounded down, as nccl-tests does; `requested` keeps what was asked for."""

    collective: str
    ranks: int
    requested: int
    send_count: int
    recv_count: int
    bytes: int


def shape(collective: str, requested: int, ranks: int, itemsize: int = ITEMSIZE) -> Shape | None:
    """The buffers of `collective` at `requested` bytes on `ranks` ranks; None when it is too small to give each
    rank one element."""
    if collective in (ALL_REDUCE, SEND_RECV):
        count = requested // itemsize
        send, recv, size = count, count, count * itemsize
    elif collective in (ALL_GATHER, REDUCE_SCATTER):
        count = requested // (itemsize * ranks)
        size = count * itemsize * ranks
        send, recv = (count, count * ranks) if collective == ALL_GATHER else (count * ranks, count)
    else:
        raise ValueError(f"unknown collective {collective!r}")
    if count == 0:
        return None
    return Shape(collective, ranks, requested, send, recv, size)


def _index(xp: Any, count: int, start: int = 0) -> Any:
    """start..start+count-1 as integers, 4-byte where they fit (a 4 GiB buffer's 2^30 indices), so the reference
    costs about what the buffer does."""
    dtype = xp.int32 if start + count < 2**31 else xp.int64
    return xp.arange(start, start + count, dtype=dtype)


def _gather_values(xp: Any, rank: int, count: int) -> Any:
    """What rank `rank` contributes to an all-gather or sends in a send/recv: (rank + 1) + i % 13, so a block in
    the wrong place or from the wrong rank differs everywhere."""
    return (_index(xp, count) % 13 + (rank + 1)).astype(xp.float32)


def _reduce_values(xp: Any, rank: int, count: int) -> Any:
    return ((_index(xp, count) + rank % _REDUCE_PERIOD) % _REDUCE_PERIOD + 1).astype(xp.float32)


def _reduced(xp: Any, ranks: int, start: int, count: int) -> Any:
    """Elements start..start+count of the sum over all ranks of _reduce_values: it depends on the index mod 5 only,
    so it is a five-entry table (Python integers, exact; float32 holds them exactly below 2^24) indexed by position."""
    full, rest = divmod(ranks, _REDUCE_PERIOD)  # every residue full times, then the first `rest` after k
    table = [full * (_REDUCE_PERIOD * (_REDUCE_PERIOD + 1) // 2)
             + sum((r + k) % _REDUCE_PERIOD + 1 for r in range(rest)) for k in range(_REDUCE_PERIOD)]
    index = _index(xp, count, start) % _REDUCE_PERIOD
    return xp.asarray(table, dtype=xp.float32)[index]


def send_buffer(xp: Any, s: Shape, rank: int) -> Any:
    """The input rank `rank` holds before the collective (length s.send_count, float32)."""
    if s.collective in (ALL_REDUCE, REDUCE_SCATTER):
        return _reduce_values(xp, rank, s.send_count)
    return _gather_values(xp, rank, s.send_count)


def expected(xp: Any, s: Shape, rank: int) -> Any:
    """What rank `rank` must hold afterwards (length s.recv_count)."""
    if s.collective == ALL_REDUCE:
        return _reduced(xp, s.ranks, 0, s.recv_count)
    if s.collective == REDUCE_SCATTER:
        return _reduced(xp, s.ranks, rank * s.recv_count, s.recv_count)
    if s.collective == ALL_GATHER:
        return xp.concatenate([_gather_values(xp, r, s.send_count) for r in range(s.ranks)])
    return _gather_values(xp, (rank - 1) % s.ranks, s.recv_count)  # send/recv: from the previous rank of the ring


def ring_peers(rank: int, ranks: int) -> tuple[int, int]:
    """(the rank this one sends to, the rank it receives from) in send/recv's ring."""
    return (rank + 1) % ranks, (rank - 1) % ranks


def mismatch(xp: Any, got: Any, want: Any) -> str | None:
    """None when `got` equals `want` element for element (an unwritten NaN never does), else how it differs."""
    if got.shape != want.shape:
        return f"{got.shape[0]} elements where {want.shape[0]} were expected"
    bad = got != want
    wrong = int(bad.sum())
    if not wrong:
        return None
    first = int(xp.argmax(bad))
    return (f"{wrong} of {want.shape[0]} elements wrong (first at {first}: got {float(got[first])!r}, "
            f"expected {float(want[first])!r})")
