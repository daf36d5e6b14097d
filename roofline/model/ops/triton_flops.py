"""FLOPs of an Inductor-generated Triton kernel body, counted as the GPU executes them, in the convention of Nsight
Compute's FLOP count: add + mul + 2 x fma of sm__sass_thread_inst_executed_op_{f,h,d}{add,mul,fma}_pred_on (one per
thread instruction whose predicate is on). What ncu does not count is not counted here either: MUFU (the SFU's
ex2, lg2, rcp, rsqrt, sqrt, sin, cos, tanh), FSETP/FMNMX/FSEL (compares, max/min, selects), F2F/F2FP/I2F
(conversions), integer and address arithmetic. A transcendental therefore costs the FMA-pipe instructions around its
MUFU: the range reduction, the polynomial, the Newton steps, not one FLOP.

How each operation lowers (Triton 3.x on sm_80/sm_90, PyTorch Inductor's printing of it):

  torch/_inductor/codegen/triton.py (TritonOverrides) prints exp as libdevice.exp (tl_math.exp under
  config.use_fast_math), sqrt as tl.sqrt_rn, rsqrt as libdevice.rsqrt, x / y as (x / y) (triton.language.div_rn
  under config.emulate_divison_rounding), sigmoid as tl.sigmoid, log/sin/cos/abs as tl_math.*, tanh/erf/pow/exp2/
  log2/log1p/expm1 as libdevice.*, maximum/minimum as triton_helpers.maximum/minimum (a compare and a select);
  triton's NVIDIA backend (third_party/nvidia/lib/TritonNVIDIAGPUToLLVM/ElementwiseOpToLLVM.cpp) lowers an fp32
  divf to div.full.f32 (MUFU.RCP and one FMUL), math.exp to an FMUL by log2(e) and ex2.approx.f32, math.log to
  lg2.approx.f32 and an FMUL by ln(2); libdevice.* are CUDA's libdevice functions (__nv_expf: a 2-FFMA range
  reduction in Cody-Waite form, MUFU.EX2 and a scaling FMUL; __nv_rsqrtf: MUFU.RSQ alone; sqrt.rn.f32: MUFU.RSQ and
  a Newton step of 2 FMUL + 2 FFMA; div.rn.f32: MUFU.RCP, FCHK and 5 FFMA). The extra FMULs that the non-ftz
  approximations wrap around MUFU for subnormal inputs are predicated off for normal inputs and not counted by ncu.

The counts of OPS are checked on a GPU by benchmarks/triton_flops_check.py (each operation compiled alone in a
tiny Triton kernel and run under ncu); docs/torch-trace.md holds the same table. Pure.
"""

from __future__ import annotations

import ast
import math
import re
from dataclasses import dataclass, replace


@dataclass(frozen=True)
class OpCost:
    """FLOPs per element that ncu counts for one operation of a kernel body in float32, and why."""

    flops: float
    lowering: str


# the operations of a kernel body, by the name Inductor prints (binary operators by their symbol)
OPS: dict[str, OpCost] = {
    "+": OpCost(1, "FADD (an FMUL+FADD pair contracts to one FFMA: 2, the same total)"),
    "-": OpCost(1, "FADD"),
    "*": OpCost(1, "FMUL"),
    "neg": OpCost(0, "an operand modifier (-x) of the instruction that uses it"),
    "/": OpCost(1, "div.full.f32: MUFU.RCP + FMUL"),
    "div_rn": OpCost(10, "div.rn.f32: MUFU.RCP, FCHK, 5 FFMA"),
    "libdevice.exp": OpCost(10, "__nv_expf: FFMA.SAT, FFMA.RM, FADD, 2 FFMA, MUFU.EX2, FMUL"),
    "tl_math.exp": OpCost(1, "FMUL by log2(e) + MUFU.EX2"),
    "libdevice.exp2": OpCost(0, "__nv_exp2f: MUFU.EX2"),
    "tl_math.exp2": OpCost(0, "ex2.approx.f32: MUFU.EX2"),
    "tl_math.log": OpCost(1, "MUFU.LG2 + FMUL by ln(2)"),
    "libdevice.log2": OpCost(0, "__nv_log2f: MUFU.LG2"),
    "libdevice.log": OpCost(12, "__nv_logf: range reduction and a polynomial (estimate)"),
    "libdevice.log1p": OpCost(14, "__nv_log1pf: a polynomial with a log fallback (estimate)"),
    "libdevice.expm1": OpCost(14, "__nv_expm1f: range reduction and a polynomial (estimate)"),
    "libdevice.tanh": OpCost(10, "__nv_tanhf: an ex2/rcp path and a polynomial for small magnitudes (estimate)"),
    # ROCm's alone: Inductor prints it only under torch.version.hip with config.use_fast_math and Triton >= 3.6
    # (TritonOverrides.tanh); CUDA's libdevice has no fast_tanhf, so no NVIDIA kernel calls it and ncu never counted it
    "libdevice.fast_tanhf": OpCost(0, "ROCm only (not in CUDA's libdevice): unmeasured"),
    "libdevice.erf": OpCost(18, "__nv_erff: polynomials and MUFU.EX2 (estimate)"),
    "tl_math.sin": OpCost(1, "sin.approx.f32: FMUL by 1/(2 pi) + MUFU.SIN"),
    "tl_math.cos": OpCost(1, "cos.approx.f32: FMUL by 1/(2 pi) + MUFU.COS"),
    "libdevice.rsqrt": OpCost(0, "__nv_rsqrtf: MUFU.RSQ"),
    "tl.sqrt_rn": OpCost(6, "sqrt.rn.f32: MUFU.RSQ + a Newton step (2 FMUL, 2 FFMA)"),
    "libdevice.sqrt": OpCost(6, "__nv_sqrtf = sqrt.rn.f32"),
    "tl.sqrt": OpCost(0, "sqrt.approx.f32: MUFU.SQRT"),
    "tl.sigmoid": OpCost(2, "1 / (1 + exp(-x)): FMUL by -log2(e), MUFU.EX2, FADD, MUFU.RCP"),
    "libdevice.pow": OpCost(24, "__nv_powf: log2 in extended precision, a product and exp2 (estimate)"),
    "tl_math.abs": OpCost(0, "an operand modifier (absolute value)"),
    "triton_helpers.maximum": OpCost(0, "FSETP + FSEL (max with NaN propagation)"),
    "triton_helpers.minimum": OpCost(0, "FSETP + FSEL"),
    "tl.where": OpCost(0, "FSEL/SEL"),
    "tl.rand": OpCost(1, "Philox (integer) + I2F + FMUL by 2^-32"),
    "cast_fp16_fp32": OpCost(1, "cvt.f32.f16: HADD2.F32 (counted by ncu as a half add)"),
    "cast": OpCost(0, "bf16->fp32 a shift; fp32->fp16/bf16 F2FP; int<->float I2F/F2I"),
}
# other spellings of the same lowering
ALIASES = {"tl.exp": "tl_math.exp", "tl.exp2": "tl_math.exp2", "tl.log": "tl_math.log", "tl.sin": "tl_math.sin",
           "tl.cos": "tl_math.cos", "tl_math.sqrt": "tl.sqrt", "tl.rsqrt": "libdevice.rsqrt",
           "tl.abs": "tl_math.abs", "libdevice.abs": "tl_math.abs", "tl.maximum": "triton_helpers.maximum",
           "tl.minimum": "triton_helpers.minimum", "tl.div_rn": "div_rn", "triton.language.div_rn": "div_rn",
           "libdevice.div_rn": "div_rn", "libdevice.sigmoid": "tl.sigmoid", "tl.math.exp": "tl_math.exp",
           "tl.math.log": "tl_math.log"}
# free: shape, index and memory operations, comparisons
FREE_CALLS = {"load", "store", "full", "broadcast_to", "arange", "full_like", "zeros", "zeros_like", "reshape",
              "program_id", "to", "view", "expand_dims", "trans", "permute", "isnan", "isinf", "signbit", "floor",
              "ceil", "trunc", "nearbyint", "device_assert", "debug_barrier", "static_assert", "cast", "num_programs",
              "randint", "randint64", "max_contiguous", "multiple_of", "constexpr", "float", "int"}
# reductions: FLOPs per element reduced (an FADD for a sum; a max or min is FMNMX: none)
REDUCTIONS = {"sum": 1, "max": 0, "min": 0, "argmax": 0, "argmin": 0, "max2": 0, "min2": 0, "reduce": 1,
              "prod": 1, "xor_sum": 0, "any": 0, "all": 0,
              # Welford: delta, weight + 1, mean + delta / weight, m2 + delta * (x - mean): 7 per element
              "welford_reduce": 7, "welford_combine": 10, "welford": 10,
              # online softmax (triton_helpers): combine is a max, two subtractions, two exps (math.exp or exp2 of
              # x*log2(e): one FMUL each) and an FFMA; reduce a subtraction, an exp, a product and the sum
              "online_softmax_reduce": 4, "online_softmax_combine": 6}
UNKNOWN_CALL = 1.0  # a math call this table does not know: one FLOP, and the caller says which

_INDEX = re.compile(r"^[xyz](\d+|index|offset|mask)?$|^[xyz]\d+_\d+$")
_REDUCED_INDEX = re.compile(r"^r\d*(_\w*)?$|^rindex$|^roffset$|^rbase$")
_R_BLOCK_NAMES = {"R0_BLOCK", "R1_BLOCK", "RBLOCK"}
_FLOAT = {"float32": "fp32", "float16": "fp16", "bfloat16": "bf16", "float64": "fp64", "fp32": "fp32",
          "fp16": "fp16", "bf16": "bf16", "fp64": "fp64", "float8e4nv": "fp8", "float8e5": "fp8"}

_MODULES = {"tl", "libdevice", "tl_math", "triton_helpers", "triton", "math"}
POINT, ROW, CONST = 2, 1, 0  # where a value lives: one per point of the iteration space, one per row, a constant


@dataclass(frozen=True)
class Value:
    dtype: str  # fp32, fp16, bf16, fp64, fp8, int, bool
    where: int
    pending: bool = False  # converted from fp16, not yet charged: it runs if arithmetic uses it or it is stored wider
    constant: float | None = None  # the value, where it is a literal or tl.full of one

    @property
    def floating(self) -> bool:
        return self.dtype.startswith(("fp", "bf"))


@dataclass
class Counted:
    """FLOPs of one assignment: per point of the iteration space and per row (after a reduction)."""

    point: float = 0.0
    row: float = 0.0
    unknown: tuple[str, ...] = ()


def _dtype_of_triton(text: str) -> str:
    """'tl.float32' / '*bf16' / 'i64' -> fp32 / bf16 / int."""
    t = text.strip().lstrip("*").removeprefix("tl.")
    if t in _FLOAT:
        return _FLOAT[t]
    if t in ("int1", "i1"):
        return "bool"
    return "int"


class BodyCounter:
    """Counts the arithmetic of a kernel body line by line, knowing each temporary's dtype and where it lives."""

    def __init__(self, pointer_types: dict[str, str], reduction: bool):
        self.pointers = {k: _dtype_of_triton(v) for k, v in pointer_types.items() if v.startswith("*")}
        self.reduction = reduction
        self.values: dict[str, Value] = {}
        self.looped: set[str] = set()  # accumulators: assigned inside a reduction loop
        self.block_sums = 0  # sums over a whole block row (a persistent reduction's): their tree is priced by the
        # launch's layout (reduction_tree_adds), here one FADD an element

    def assign(self, target: str, expr: str, in_loop: bool) -> Counted:
        """The FLOPs of `target = expr`; remembers what target holds."""
        try:
            node = ast.parse(expr.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # parser stack: 200,000 minuses
            return Counted()
        counted = Counted()
        value = self._visit(node, counted)
        if in_loop or not self.reduction:
            counted = Counted(counted.point + counted.row, 0.0, counted.unknown)
            value = replace(value, where=POINT if in_loop else value.where)
        for name in target.split(","):
            self.values[name.strip()] = value
            if in_loop:
                self.looped.add(name.strip())
        return counted

    def store(self, expr: str, in_loop: bool) -> Counted:
        """The FLOPs of a `tl.store(pointer, value, mask)` statement: a value still pending its fp16 -> fp32
        conversion is converted now, unless it is stored to a float16 buffer (fptrunc(fpext(x)) folds to x). ncu
        counts the conversion of an fp16 load stored as float32 (Inductor's `_to_copy` of a gradient to the
        master weights' dtype: one sm__sass_thread_inst_executed_op_hadd_pred_on per element, measured on an
        H100, gpu-data mix capture); an fp32 -> fp16 store is F2FP, not counted."""
        counted = Counted()
        try:
            node = ast.parse(expr.strip(), mode="eval").body
        except (SyntaxError, ValueError, RecursionError, MemoryError):  # parser stack: 200,000 minuses
            return counted
        if not isinstance(node, ast.Call) or len(node.args) < 2:
            return counted
        names = [n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)]
        target = next((self.pointers[n] for n in names if n in self.pointers), "fp32")
        value = self._visit(node.args[1], counted)
        if value.pending and target != "fp16":
            self._use(node.args[1], counted)
        if in_loop or not self.reduction:
            counted = Counted(counted.point + counted.row, 0.0, counted.unknown)
        return counted

    def _name(self, name: str) -> Value:
        # the index variables live where their axis says, whatever constant arithmetic builds them
        if _REDUCED_INDEX.match(name) and "numel" not in name:
            return Value("int", POINT)
        if _INDEX.match(name):
            return Value("int", ROW)
        return self.values.get(name, Value("int", CONST))

    def _use(self, node: ast.AST, c: Counted) -> Value:
        """An operand of arithmetic: a pending fp16 -> fp32 conversion of it runs now (once per variable)."""
        v = self._visit(node, c)
        if not v.pending:
            return v
        self._charge(c, OPS["cast_fp16_fp32"].flops, v.where)
        v = replace(v, pending=False)
        if isinstance(node, ast.Name):
            self.values[node.id] = v
        return v

    def _charge(self, counted: Counted, flops: float, where: int) -> None:
        if where == POINT:
            counted.point += flops
        elif where == ROW:
            counted.row += flops
        # a constant expression is folded by the compiler

    def _visit(self, node: ast.AST, c: Counted) -> Value:
        if isinstance(node, ast.Constant):
            number = node.value if isinstance(node.value, (int, float)) and not isinstance(node.value, bool) else None
            return Value("fp32" if isinstance(node.value, float) else "int", CONST, constant=number)
        if isinstance(node, ast.Name):
            return self._name(node.id)
        if isinstance(node, ast.Subscript):  # x[:, None]
            return self._visit(node.value, c)
        if isinstance(node, ast.UnaryOp):
            v = self._visit(node.operand, c)
            if isinstance(node.op, ast.Not):
                return Value("bool", v.where)
            return v  # -x and ~x: an operand modifier, or integer work
        if isinstance(node, ast.BinOp):
            a, b = self._use(node.left, c), self._use(node.right, c)
            where = max(a.where, b.where)
            if isinstance(node.op, (ast.BitAnd, ast.BitOr, ast.BitXor, ast.LShift, ast.RShift)):
                return Value("bool" if "bool" in (a.dtype, b.dtype) else "int", where)
            floats = [v.dtype for v in (a, b) if v.floating]
            if isinstance(node.op, ast.Div) and not floats:
                floats = ["fp32"]
            if not floats:
                return Value("int", where)  # index arithmetic
            dtype = "fp32" if "fp32" in floats else floats[0]
            symbol = {ast.Add: "+", ast.Sub: "-", ast.Mult: "*", ast.Div: "/"}.get(type(node.op))
            if symbol == "*" and 1 in (a.constant, b.constant) or symbol == "/" and b.constant == 1:
                symbol = None  # x * 1.0 folds away (tmp * tl.full([1], 1.0, ...), as Inductor writes a cast scale)
            if symbol is not None:
                self._charge(c, OPS[symbol].flops, where)
            elif isinstance(node.op, (ast.Mod, ast.FloorDiv, ast.Pow)):
                self._charge(c, OPS["/"].flops + 2, where)  # a float remainder: a division, a floor and an FFMA
            return Value(dtype, where)
        if isinstance(node, ast.Compare):
            where = max(self._visit(n, c).where for n in [node.left, *node.comparators])
            return Value("bool", where)
        if isinstance(node, ast.BoolOp):
            return Value("bool", max(self._visit(n, c).where for n in node.values))
        if isinstance(node, ast.Call):
            return self._call(node, c)
        if isinstance(node, (ast.List, ast.Tuple)):
            return Value("int", CONST)
        if isinstance(node, ast.Attribute):
            return Value("int", CONST)  # tl.float32, x.dtype
        return Value("fp32", CONST)

    def _call(self, node: ast.Call, c: Counted) -> Value:
        func = node.func
        dotted = ast.unparse(func) if isinstance(func, (ast.Attribute, ast.Name)) else ""
        short = dotted.rsplit(".", 1)[-1]
        base = func
        while isinstance(base, ast.Attribute):
            base = base.value
        # a method of a value (tmp0.to(...), tl.load(...).to(...), x.sum(1)), not a module's function (tl.sum)
        method = isinstance(func, ast.Attribute) and not (isinstance(base, ast.Name) and base.id in _MODULES)
        if method and short == "to":  # a conversion; the only one ncu counts is fp16 -> fp32 (HADD2.F32)
            v = self._visit(func.value, c)
            target = _dtype_of_triton(ast.unparse(node.args[0])) if node.args else v.dtype
            # fp16 -> fp32 is an HADD2.F32 that ncu counts, unless the value is only stored back as fp16
            # (fptrunc(fpext x) folds away): charged when arithmetic first uses it, or when stored otherwise
            return Value(target, v.where, pending=v.pending or (v.dtype == "fp16" and target == "fp32"))
        if short == "load" and node.args:
            names = [n.id for n in ast.walk(node.args[0]) if isinstance(n, ast.Name)]
            dtype = next((self.pointers[n] for n in names if n in self.pointers), "fp32")
            where = max((self._name(n).where for n in names if n not in self.pointers), default=CONST)
            return Value(dtype, where)
        if short in ("full", "full_like", "zeros") and dotted.startswith("tl."):
            dtype = _dtype_of_triton(ast.unparse(node.args[2])) if len(node.args) >= 3 else "fp32"
            value = node.args[1] if len(node.args) >= 2 else None
            number = value.value if isinstance(value, ast.Constant) and isinstance(value.value, (int, float)) else None
            return Value(dtype, CONST, constant=number)
        if short == "broadcast_to" and node.args:
            v = self._visit(node.args[0], c)
            shape = ast.unparse(node.args[1]) if len(node.args) > 1 else ""
            return Value(v.dtype, POINT if any(r in shape for r in _R_BLOCK_NAMES) else v.where, v.pending)
        if short in ("where", "broadcast_to") or short in FREE_CALLS:
            args = [self._visit(a, c) for a in node.args]
        else:
            args = [self._use(a, c) for a in node.args]
        if method:
            args.insert(0, self._use(func.value, c))  # x.sum(1): the tensor is the receiver
        if short in REDUCTIONS and (method or dotted.startswith(("tl.", "triton_helpers."))):
            v = args[0] if args else Value("fp32", POINT)
            cost = REDUCTIONS[short] if v.floating or short.startswith("welford") else 0
            operand = func.value if method else (node.args[0] if node.args else None)
            if isinstance(operand, ast.Name) and operand.id in self.looped:
                # the accumulator a reduction loop left: each element was already added in the loop; what remains
                # is a tree over the R0_BLOCK lanes of each row (autotuned, not in the source): counted once a row
                c.row += cost
            else:
                c.point += cost
                if short == "sum" and cost:
                    self.block_sums += 1
            return Value(v.dtype, ROW if self.reduction else v.where)
        where = max((a.where for a in args), default=CONST)
        floats = [a.dtype for a in args if a.floating]
        if short in ("where",):
            vals = args[1:]
            fl = [a.dtype for a in vals if a.floating]
            return Value(fl[0] if fl else (vals[0].dtype if vals else "int"), where, any(a.pending for a in vals))
        if short in FREE_CALLS:
            return Value(floats[0] if floats else (args[0].dtype if args else "int"), where)
        key = ALIASES.get(dotted, dotted)
        if key in OPS:
            cost = OPS[key].flops
        elif dotted.startswith(("libdevice.", "tl_math.", "tl.", "triton_helpers.", "triton.language.")):
            cost = UNKNOWN_CALL
            c.unknown += (dotted,)
        else:
            return Value("fp32", where)
        self._charge(c, cost, where)
        return Value("fp32", where)


def statements(body: str) -> list[str]:
    """The lines of a kernel body with a statement that spans lines (an open bracket) joined into one."""
    out: list[str] = []
    pending = ""
    depth = 0
    for line in body.splitlines():
        text = line if not pending else pending + " " + line.strip()
        depth = 0
        for ch in text:  # generated code puts no brackets inside its string literals that matter here
            depth += ch in "([{"
            depth -= ch in ")]}"
        if depth > 0 and len(text) < 10_000:
            pending = text
            continue
        out.append(text)
        pending = ""
    if pending:
        out.append(pending)
    return out


def reduction_tree_adds(r_block: int, x_block: int, num_warps: int, r_contiguous: bool, element_bits: int) -> float:
    """FADDs a row that Triton runs for tl.sum over a [XBLOCK, R0_BLOCK] block, every lane's counted as ncu counts
    them. Triton lays the block out as the coalescing pass does (triton/lib/Dialect/TritonGPU/Transforms/
    Coalesce.cpp, BlockedEncodingAttr's builder): along the contiguous dimension first, each thread min(128 bits of
    elements, elements / threads) of it, threads of a warp, then warps, the other dimension taking what is left.
    The reduction (lib/Conversion/TritonGPUToLLVM/ReduceOpToLLVM.cpp) adds within each thread (R/T - 1 each of the
    T threads holding a row), then a shuffle butterfly within each warp (every lane of the tpw a row adds at each
    of log2(tpw) steps), then, with wpc warps along the row, a second butterfly over their partials in shared
    memory (wpc lanes, log2(wpc) steps, repeated on every thread the block has beyond its rows x wpc partials).
    Checked against ncu on an H100 (the mix capture): 48 a row for R0_BLOCK = 32, XBLOCK = 128, 8 warps."""
    threads = 32 * num_warps
    elements = r_block * x_block
    fast, slow = (r_block, x_block) if r_contiguous else (x_block, r_block)
    per_thread = max(1, min(128 // max(element_bits, 8), fast, elements // threads or 1))
    tpw_fast = max(1, min(32, fast // per_thread))
    tpw_slow = 32 // tpw_fast
    wpc_fast = max(1, min(num_warps, -(-fast // (per_thread * tpw_fast))))
    wpc_slow = num_warps // wpc_fast
    tpw, wpc = (tpw_fast, wpc_fast) if r_contiguous else (tpw_slow, wpc_slow)
    holders = tpw * wpc
    in_thread = r_block - holders if r_block >= holders else 0
    shuffle = wpc * tpw * math.log2(tpw)
    shared = 0.0
    if wpc > 1:
        shared = wpc * math.log2(wpc) * max(1.0, threads / (x_block * wpc))
    return in_thread + shuffle + shared
