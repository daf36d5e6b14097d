"""The work of Inductor's flex_attention templates (triton_tem_fused_flex_attention*), from the generated source or,
without it, the launch's recorded shapes. Pure.

Sources: torch/_inductor/kernel/flex/templates/flex_attention.py.jinja (forward: forward_block_mn) and
flex_backwards.py.jinja (bwd_dq_block_mn, bwd_dkdv_block_mn) in pytorch/pytorch; the block mask from
torch/nn/attention/flex_attention.py (create_block_mask, _convert_mask_to_block_mask).

What the kernels run:

  blocks   the kernels loop only over the (SPARSE_Q_BLOCK_SIZE x SPARSE_KV_BLOCK_SIZE) tiles the block mask lists:
           its partial blocks (KV_IDX) and full blocks (FULL_KV_IDX). create_block_mask lists a tile when mask_mod
           is true for at least one (query, key) pair in it; within a partial tile every pair is computed and the
           masked ones set to -inf after. A causal mask (m >= n) so runs n(n+1)/2 of n x n tiles, about half.
           With the source, mask_mod (the tmpK statements the template renders under `if not IS_FULL_BLOCKS`) is
           evaluated on every (m, n) where it depends on the query and key indices alone; otherwise (and without
           the source) every tile is counted: an upper bound.
  tensor   per computed (query, key) pair, forward: q k^T (2 QK_HEAD_DIM) and p v (2 V_HEAD_DIM); backward: the
           dQ pass recomputes q k^T, computes dO v^T and ds k (2 QK + 2 V + 2 QK), the dK/dV pass recomputes
           k q^T, computes p^T dO, v dO^T and ds^T q (2 QK + 2 V + 2 V + 2 QK): 2 (4 QK + 3 V). Head dims are the
           *_ROUNDED ones the tiles hold.
  CUDA     per pair, in ncu's convention (FADD + FMUL + 2 FFMA; exp2 is MUFU.EX2, no FLOP; max and where none):
           forward qk *= SM_SCALE and *= RCP_LN2 (both skipped when PRESCALE_QK scales q once a row instead), the
           subtraction of the row max before exp2, the row sum of p: 4; and per row of each BLOCK_N tile the
           rescale of the accumulator by alpha (V_HEAD_DIM) and of l_i (an FFMA, 2). Backward, each of its two
           passes: the two scales, the subtraction of the LSE, ds = p (dp - delta): 5, so 10.
"""

from __future__ import annotations

import ast
import operator
import re
from dataclasses import dataclass
from typing import Any

MAX_MASK_PAIRS = 1 << 26  # (query, key) pairs mask_mod is evaluated on; past it every tile is counted
MAX_TILES = 1 << 20  # tiles of the block mask it is evaluated for
_CHUNK = 1 << 18  # pairs evaluated at once (a few MB of arrays)
MAX_MASK_NODES = 512  # expression nodes in mask_mod's temporaries; Inductor renders a handful
_WORK = 1 << 31  # node evaluations x pairs (a few seconds of NumPy); past it every tile is counted
_LIVE = 1 << 24  # array elements held at once across the temporaries (128 MB of int64)
_INT64 = 1 << 63
_INT = re.compile(r"^\s+(?P<name>[A-Z][A-Z0-9_]*)\s*(?::\s*tl\.constexpr)?\s*=\s*(?P<value>[0-9]{1,9}|True|False)\s*$",
                  re.MULTILINE)
_MASK_START = re.compile(r"^(?P<indent>\s+)if not IS_FULL_BLOCKS:\s*$", re.MULTILINE)
_TMP = re.compile(r"^\s+(?P<name>tmp\d+)\s*=\s*(?P<expr>.+?)\s*$")
_MASK_OUT = re.compile(r"^\s+mask_mod_output\s*=\s*(?P<name>\w+)\s*$")


@dataclass(frozen=True)
class FlexTemplate:
    """What a flex_attention template's source fixes at compile time."""

    backward: bool
    batch: int  # ZQ
    heads: int  # HQ, query heads
    q_len: int
    kv_len: int
    qk_dim: int  # QK_HEAD_DIM_ROUNDED
    v_dim: int  # V_HEAD_DIM_ROUNDED
    block_n: int  # the forward's BLOCK_N (per-row work runs once per such tile)
    prescale: bool  # PRESCALE_QK
    pairs: int | None  # (query, key) pairs computed per (batch, head) as mask_mod lists tiles; None: not read


def read_flex(text: str) -> FlexTemplate | None:
    """A flex_attention template's sizes and its block mask's computed pairs; None for any other kernel."""
    if "SPARSE_KV_BLOCK_SIZE" not in text or "forward_block_mn" not in text and "bwd_dq_block_mn" not in text:
        return None
    values: dict[str, int] = {}
    for m in _INT.finditer(text):
        v = m.group("value")
        values.setdefault(m.group("name"), {"True": 1, "False": 0}.get(v, None) if not v.isdigit() else int(v))
    need = ("ZQ", "HQ", "Q_LEN", "KV_LEN", "QK_HEAD_DIM_ROUNDED", "V_HEAD_DIM_ROUNDED", "SPARSE_Q_BLOCK_SIZE",
            "SPARSE_KV_BLOCK_SIZE")
    if any(not values.get(k) for k in need):
        return None
    backward = "bwd_dq_block_mn" in text
    block_n = values.get("BLOCK_N") or values.get("BLOCK_N2") or values["SPARSE_KV_BLOCK_SIZE"]
    pairs = _mask_pairs(text, values["Q_LEN"], values["KV_LEN"], values["SPARSE_Q_BLOCK_SIZE"],
                        values["SPARSE_KV_BLOCK_SIZE"])
    return FlexTemplate(backward, values["ZQ"], values["HQ"], values["Q_LEN"], values["KV_LEN"],
                        values["QK_HEAD_DIM_ROUNDED"], values["V_HEAD_DIM_ROUNDED"], block_n,
                        bool(values.get("PRESCALE_QK")), pairs)


def _mask_expression(text: str) -> tuple[dict[str, ast.expr], str] | None:
    """The first mask_mod the template rendered: its tmpK = ... statements and the name of its output."""
    start = _MASK_START.search(text)
    if start is None:
        return None
    indent = len(start.group("indent"))
    temps: dict[str, ast.expr] = {}
    for line in text[start.end():].splitlines()[1:]:
        if not line.strip():
            continue
        if len(line) - len(line.lstrip()) <= indent:
            return None
        out = _MASK_OUT.match(line)
        if out:
            return temps, out.group("name")
        t = _TMP.match(line)
        if t is None:
            return None
        try:
            temps[t.group("name")] = ast.parse(t.group("expr"), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return None
        if len(temps) > MAX_MASK_NODES:
            return None
    return None


def _nodes(temps: dict[str, ast.expr]) -> int:
    """Expression nodes across the temporaries: each evaluates to at most one chunk-sized array."""
    return sum(1 for e in temps.values() for _ in ast.walk(e))


class _Unknown(Exception):
    pass


# elementwise on NumPy arrays (imported only when a mask is evaluated: `roofline --help` stays fast)
_BIN = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv,
        ast.Mod: operator.mod, ast.BitAnd: operator.and_, ast.BitOr: operator.or_, ast.BitXor: operator.xor}
_CMP = {ast.GtE: operator.ge, ast.Gt: operator.gt, ast.LtE: operator.le, ast.Lt: operator.lt, ast.Eq: operator.eq,
        ast.NotEq: operator.ne}


def _evaluate(node: ast.expr, temps: dict[str, ast.expr], env: dict[str, Any], depth: int = 0) -> Any:
    """mask_mod's value over the index grids m and n; _Unknown where it uses anything else (b, h, a loaded buffer)."""
    if depth > 200:
        raise _Unknown
    if isinstance(node, ast.Name):
        if node.id in env:
            return env[node.id]
        if node.id in temps:  # each tmpK once (env keeps it): a chain of doublings stays linear
            env[node.id] = _evaluate(temps[node.id], temps, env, depth + 1)
            return env[node.id]
        raise _Unknown
    import numpy as np

    if isinstance(node, ast.Constant) and isinstance(node.value, bool):
        return np.asarray(node.value)
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        if not -_INT64 <= node.value < _INT64:  # NumPy would promote to uint64, float or object (unbounded ints)
            raise _Unknown
        return np.asarray(node.value, dtype=np.int64)
    if isinstance(node, ast.BinOp) and type(node.op) in _BIN:
        left, right = (_evaluate(x, temps, env, depth + 1) for x in (node.left, node.right))
        if isinstance(node.op, (ast.FloorDiv, ast.Mod)) and np.any(right == 0):
            raise _Unknown
        return _BIN[type(node.op)](left, right)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _CMP:
        return _CMP[type(node.ops[0])](_evaluate(node.left, temps, env, depth + 1),
                                       _evaluate(node.comparators[0], temps, env, depth + 1))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.Invert, ast.Not)):
        v = _evaluate(node.operand, temps, env, depth + 1)
        if isinstance(node.op, ast.USub):
            return -v
        return np.logical_not(v) if v.dtype == bool or isinstance(node.op, ast.Not) else np.invert(v)
    raise _Unknown


def _mask_pairs(text: str, q_len: int, kv_len: int, sparse_q: int, sparse_kv: int) -> int | None:
    """(query, key) pairs the kernel computes per (batch, head): every pair of each tile where mask_mod holds for
    one pair at least. None when the mask cannot be read (it uses b, h or a buffer) or is too large to evaluate."""
    import numpy as np

    found = _mask_expression(text)
    if found is None or q_len * kv_len > MAX_MASK_PAIRS:
        return None
    temps, out = found
    nodes = _nodes(temps)
    q_tiles, kv_tiles = -(-q_len // sparse_q), -(-kv_len // sparse_kv)
    if q_tiles * kv_tiles > MAX_TILES or nodes > MAX_MASK_NODES or nodes * q_len * kv_len > _WORK:
        return None
    n = np.arange(kv_tiles * sparse_kv)[None, :]
    rows = max(1, min(_CHUNK, _LIVE // max(nodes, 1)) // n.shape[1])
    tiles = 0
    try:
        for i in range(q_tiles):
            hit = np.zeros(kv_tiles, dtype=bool)
            for start in range(i * sparse_q, min((i + 1) * sparse_q, q_len), rows):
                m = np.arange(start, min(start + rows, (i + 1) * sparse_q, q_len))[:, None]
                value = np.broadcast_to(_evaluate(ast.Name(id=out), temps, {"m": m, "n": n}), (len(m), n.shape[1]))
                value = value.astype(bool) & (n < kv_len)  # the padded keys of a last partial tile are no keys
                hit |= value.reshape(len(m), kv_tiles, sparse_kv).any(axis=(0, 2))
            tiles += int(hit.sum())
    except (_Unknown, TypeError, ValueError, OverflowError, FloatingPointError, ZeroDivisionError, MemoryError):
        return None
    return tiles * sparse_q * sparse_kv


@dataclass(frozen=True)
class FlexWork:
    tensor: float  # FLOPs on tensor cores
    cuda: float  # FLOPs on CUDA cores
    note: str


def flex_work(t: FlexTemplate) -> FlexWork:
    """The FLOPs of one launch (see the module's docstring)."""
    dense = t.q_len * t.kv_len
    pairs = t.pairs if t.pairs is not None else dense
    total = pairs * t.batch * t.heads
    if t.backward:
        tensor = total * 2 * (4 * t.qk_dim + 3 * t.v_dim)
        cuda = total * 2 * (3 if t.prescale else 5)  # each pass: (the two scales), - LSE, p * (dp - delta)
    else:
        tensor = total * 2 * (t.qk_dim + t.v_dim)
        per_row_tiles = total / t.block_n  # (row, BLOCK_N tile) steps
        cuda = total * (2 if t.prescale else 4) + per_row_tiles * (t.v_dim + 2)
        if t.prescale:  # q * SM_SCALE * RCP_LN2 once a row instead
            cuda += t.batch * t.heads * t.q_len * t.qk_dim * 2
    share = f"{pairs / dense:.0%}" if dense else "0%"
    how = (f"the block mask runs {share} of the (query, key) pairs (mask_mod read from the source)"
           if t.pairs is not None else "every tile counted (which tiles the block mask runs is not read: an upper bound)")
    return FlexWork(float(tensor), float(cuda), f"flex_attention {'backward' if t.backward else 'forward'} "
                    f"template: {how}; tensor-core and CUDA-core work per computed pair")


def flex_from_shapes(backward: bool, shapes: list[tuple[tuple[int, ...], bool]]) -> FlexTemplate | None:
    """Without the source: the sizes from the recorded buffers (shape, is floating point), every tile counted.
    Forward (arg_Q.. as Inductor passes them, possibly one fused QKV buffer; LSE; block-mask int32 buffers; the
    output last, [Z, H, M, Dv]); backward (Q, K, V as [Z, H, M|N, D] first, then LSE, DELTA, dO, ...)."""
    floats = [s for s, f in shapes if f and len(s) == 4]
    ints = [s for s, f in shapes if not f and len(s) == 4]
    if backward and len(floats) >= 3:
        q, k, v = floats[0], floats[1], floats[2]
        return FlexTemplate(True, q[0], q[1], q[2], k[2], q[3], v[3], k[2], False, None)
    if not backward and floats and ints:
        out, idx = floats[-1], ints[0]  # KV_IDX: [B, H, q tiles, kv tiles]
        if idx[2] <= 0 or out[2] % idx[2]:
            return None
        tile = out[2] // idx[2]  # create_block_mask's BLOCK_SIZE, as the query side shows it
        return FlexTemplate(False, out[0], out[1], out[2], idx[3] * tile, out[3], out[3], tile, False, None)
    return None
