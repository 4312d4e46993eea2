"""LLVM IR of L-BFGS between evaluations: its direction, line search and memory as machine code.

L-BFGS-B (Byrd, Lu, Nocedal and Zhu 1995) on a problem without bounds is L-BFGS: its Cauchy point
and subspace minimisation give the quasi-Newton direction ``-H g``, its line search is Moré and
Thuente's (1994, MINPACK-2's ``dcsrch``) with ``ftol`` 1e-3, ``gtol`` 0.9, ``xtol`` 0.1, its first
step ``1/|d|`` and every later one 1.  This is that iteration, with ``H g`` by the two-loop
recursion (Nocedal 1980) over the last ``m`` corrections: the same iterates in exact arithmetic.

Driven by reverse communication, as scipy drives L-BFGS-B's routine: ``call(x, g) -> task`` (a
builtin function, :mod:`symad.native.fastcall`, whose context is the record ``w``) reads the value
at ``x`` from ``w[F]`` and the gradient from ``g``, and answers

* ``FG``: evaluate at the new ``x`` (written in place), put the value in ``w[F]`` and the
  gradient in ``g``, call again;
* ``NEW_X`` / ``NEW_X_CHECK``: ``x``, ``g``, ``w[F]`` are the next iterate (``w`` holds
  ``g·g``, ``x·x`` and the step's ``s·s``); ``NEW_X_CHECK`` where a stopping rule of the driver
  may hold (its thresholds, with a margin for rounding, in ``w``), so a caller looks only then;
* ``STALLED``: the last iterate did not lower f (L-BFGS-B's own test with ``factr`` 0);
* ``FAILED``: no acceptable point in :data:`LBFGS_LINE_STEPS` evaluations, with no memory left to
  drop; ``NO_DESCENT``: ``-g`` is no descent direction (``g`` is 0 or not finite).

As in L-BFGS-B: a line search ending on one of Moré-Thuente's warnings (rounding errors, the
step at a bound of its interval) ends it at the point it reached; a failed one with corrections
in memory drops them and starts again along ``-g`` from the last iterate (first step 1).

Dot products sum eight lanes (four-wide vectors, two of them) in a fixed order, then the tail:
the same bits for the same ``n`` on every x86 CPU.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import numpy as np

from symad.core.ops import OPS
from symad.native.fastcall import fast_entry_ir

FTOL, GTOL, XTOL = 1e-3, 0.9, 0.1  # the line search's (L-BFGS-B's)
STEP_MAX = 1e10  # L-BFGS-B's largest step without bounds
LBFGS_LINE_STEPS = 20  # most evaluations of one line search (scipy's maxls)
EPS = 2.220446049250313e-16  # a correction is kept where s·y > EPS·(-s·g) (L-BFGS-B's test)


class LbfgsTask:
    """What ``step`` answers (see above)."""

    FG, NEW_X, FAILED, NO_DESCENT, NEW_X_CHECK, STALLED = 1, 2, 3, 4, 5, 6


# The record: these scalars, then d, the last iterate's x and g, the corrections s and y (a ring of
# m + 1 rows of n: the row after the newest is free for the next correction, written before it
# is known to be kept), their 1/(s·y), and the two-loop's alphas.
SCALARS = ("F", "PHASE", "N", "M", "K", "HEAD", "FOLD", "STP", "GINIT", "GTEST", "BRACKT", "STAGE",
           "WIDTH", "WIDTH1", "STX", "FX", "GX", "STY", "FY", "GY", "STMIN", "STMAX", "NLS", "GG", "XX",
           "SS", "GAMMA", "STALL", "TOL2", "XTOL_STOP", "UNBOUNDED", "BIG_X2", "ITER")
LBFGS_SLOT = {name: i for i, name in enumerate(SCALARS)}
HEADER = len(SCALARS)


def record_size(n: int, m: int) -> int:
    """The record's length in doubles for ``n`` variables and ``m`` corrections."""
    return HEADER + 3 * n + 2 * (m + 1) * (n + 1)


def lbfgs_record(n: int, m: int, **scalars: float) -> np.ndarray:
    """A record for ``n`` variables and ``m`` corrections, the scalars named set (``F``: the start's
    value; the driver's thresholds ``TOL2``, ``XTOL_STOP``, ``UNBOUNDED``, ``BIG_X2``), at the start."""
    record = np.zeros(record_size(n, m))
    record[LBFGS_SLOT["N"]], record[LBFGS_SLOT["M"]] = n, m
    for name, value in scalars.items():
        record[LBFGS_SLOT[name]] = value
    return record


def _ir() -> Any:
    from llvmlite import ir

    return ir


class _Writer:
    """The module under construction, and the few idioms its functions share."""

    def __init__(self) -> None:
        ir = _ir()
        self.ir = ir
        self.module = ir.Module(name="lbfgs")
        self.f64, self.i64, self.ptr = ir.DoubleType(), ir.IntType(64), ir.PointerType()
        self.v4 = ir.VectorType(self.f64, 4)
        unary = ir.FunctionType(self.f64, [self.f64])
        # the op table's own lowerings of sqrt and abs (intrinsics: the same bits as every backend's)
        self.sqrt_fn = ir.Function(self.module, unary, OPS["sqrt"].llvm.symbol)
        self.fabs_fn = ir.Function(self.module, unary, OPS["abs"].llvm.symbol)

    def const(self, value: float) -> Any:
        return self.ir.Constant(self.f64, value)

    def int(self, value: int) -> Any:
        return self.ir.Constant(self.i64, value)

    def function(self, name: str, ret: Any, args: list[Any]) -> tuple[Any, Any]:
        fn = self.ir.Function(self.module, self.ir.FunctionType(ret, args), name)
        return fn, self.ir.IRBuilder(fn.append_basic_block("entry"))

    def kernel(self, name: str, ret: Any, args: list[Any]) -> tuple[Any, Any]:
        """A vector loop: called, not inlined (a copy at each of its calls cost compile time)."""
        fn, b = self.function(name, ret, args)
        fn.linkage = "internal"
        fn.attributes.add("noinline")
        return fn, b

    @staticmethod
    def at(b: Any, base: Any, index: Any, typ: Any) -> Any:
        return b.gep(base, [index], source_etype=typ)

    @contextmanager
    def counted(self, b: Any, start: Any, end: Any, step: int = 1) -> Iterator[Any]:
        """A loop over ``i`` from ``start`` while ``i < end`` by ``step``: its body is the block's."""
        before = b.block
        body, after = b.append_basic_block("body"), b.append_basic_block("after")
        b.cbranch(b.icmp_signed("<", start, end), body, after)
        b.position_at_end(body)
        i = b.phi(self.i64)
        i.add_incoming(start, before)
        yield i
        nxt = b.add(i, self.int(step))
        i.add_incoming(nxt, b.block)
        b.cbranch(b.icmp_signed("<", nxt, end), body, after)
        b.position_at_end(after)


def _kernels(w: _Writer) -> dict[str, Any]:
    """The vector loops: ``dot``, ``axpy`` (y += a·x), ``lincomb`` (out = a + c·b), ``sub`` (out = a − b),
    ``neg`` (out = −a), ``copy``, ``scale`` (out = c·out)."""
    f64, i64, ptr = w.f64, w.i64, w.ptr
    fns = {}

    fn, b = w.kernel("dot", f64, [ptr, ptr, i64])
    a, c, n = fn.args
    acc = [b.alloca(w.v4), b.alloca(w.v4)]
    zero = w.ir.Constant(w.v4, [0.0] * 4)
    for slot in acc:
        b.store(zero, slot)
    blocks = b.and_(n, w.int(-8))
    with w.counted(b, w.int(0), blocks, 8) as i:
        for lane, slot in enumerate(acc):
            k = b.add(i, w.int(4 * lane))
            x = b.load(w.at(b, a, k, f64), typ=w.v4, align=8)
            y = b.load(w.at(b, c, k, f64), typ=w.v4, align=8)
            b.store(b.fadd(b.load(slot, typ=w.v4), b.fmul(x, y)), slot)
    v = b.fadd(b.load(acc[0], typ=w.v4), b.load(acc[1], typ=w.v4))
    lanes = [b.extract_element(v, w.ir.Constant(w.ir.IntType(32), j)) for j in range(4)]
    total = b.alloca(f64)
    b.store(b.fadd(b.fadd(lanes[0], lanes[1]), b.fadd(lanes[2], lanes[3])), total)
    with w.counted(b, blocks, n) as i:
        x = b.load(w.at(b, a, i, f64), typ=f64)
        y = b.load(w.at(b, c, i, f64), typ=f64)
        b.store(b.fadd(b.load(total, typ=f64), b.fmul(x, y)), total)
    b.ret(b.load(total, typ=f64))
    fns["dot"] = fn

    def elementwise(name: str, args: list[Any], value: Any) -> None:
        fn, b = w.kernel(name, w.ir.VoidType(), [ptr, *args, i64])
        out, *rest, n = fn.args
        with w.counted(b, w.int(0), n) as i:
            b.store(value(b, i, out, *rest), w.at(b, out, i, f64))
        b.ret_void()
        fns[name] = fn

    def load(b: Any, p: Any, i: Any) -> Any:
        return b.load(w.at(b, p, i, f64), typ=f64)

    elementwise("axpy", [f64, ptr], lambda b, i, y, s, x: b.fadd(load(b, y, i), b.fmul(s, load(b, x, i))))
    elementwise("lincomb", [ptr, f64, ptr], lambda b, i, o, a, s, x: b.fadd(load(b, a, i), b.fmul(s, load(b, x, i))))
    elementwise("sub", [ptr, ptr], lambda b, i, o, a, c: b.fsub(load(b, a, i), load(b, c, i)))
    elementwise("neg", [ptr], lambda b, i, o, a: b.fneg(load(b, a, i)))
    elementwise("copy", [ptr], lambda b, i, o, a: load(b, a, i))
    elementwise("scale", [f64], lambda b, i, o, s: b.fmul(s, load(b, o, i)))
    return fns


class _Step:
    """``step(w, x, g) -> task``: the body, one method a part of the iteration."""

    def __init__(self, w: _Writer, kernels: dict[str, Any]):
        self.w, self.k = w, kernels
        fn, self.b = w.function("step", w.f64, [w.ptr, w.ptr, w.ptr])
        self.fn = fn
        self.rec, self.x, self.g = fn.args
        b = self.b
        self.n = b.fptosi(self.get("N"), w.i64)
        self.m = b.fptosi(self.get("M"), w.i64)
        self.ring = b.add(self.m, w.int(1))
        nn, three = self.n, b.mul(self.n, w.int(3))
        rn = b.mul(self.ring, nn)
        self.d, self.xold, self.gold = self.array(w.int(0)), self.array(nn), self.array(b.mul(nn, w.int(2)))
        self.s, self.y = self.array(three), self.array(b.add(three, rn))
        self.rho = self.array(b.add(three, b.mul(rn, w.int(2))))
        self.alpha = self.array(b.add(b.add(three, b.mul(rn, w.int(2))), self.ring))

    # ---------------------------------------------------------------- helpers
    def array(self, offset: Any) -> Any:
        return self.b.gep(self.rec, [self.b.add(offset, self.w.int(HEADER))], source_etype=self.w.f64)

    def get(self, name: str) -> Any:
        return self.b.load(self.w.at(self.b, self.rec, self.w.int(LBFGS_SLOT[name]), self.w.f64), typ=self.w.f64)

    def put(self, name: str, value: Any) -> None:
        if isinstance(value, (int, float)):
            value = self.w.const(float(value))
        self.b.store(value, self.w.at(self.b, self.rec, self.w.int(LBFGS_SLOT[name]), self.w.f64))

    def call(self, name: str, *args: Any) -> Any:
        return self.b.call(self.k[name], list(args))

    def dot(self, a: Any, c: Any) -> Any:
        return self.call("dot", a, c, self.n)

    def row(self, base: Any, index: Any) -> Any:
        return self.b.gep(base, [self.b.mul(index, self.n)], source_etype=self.w.f64)

    def fcmp(self, op: str, a: Any, c: Any) -> Any:
        return self.b.fcmp_ordered(op, a, c)

    def sel(self, cond: Any, a: Any, c: Any) -> Any:
        return self.b.select(cond, a, c)

    def max(self, a: Any, c: Any) -> Any:
        """Fortran's MAX as MINPACK-2 reads it: ``c`` where ``c > a``, else ``a``."""
        return self.sel(self.fcmp(">", c, a), c, a)

    def min(self, a: Any, c: Any) -> Any:
        return self.sel(self.fcmp("<", c, a), c, a)

    def abs(self, a: Any) -> Any:
        return self.b.call(self.w.fabs_fn, [a])

    def sqrt(self, a: Any) -> Any:
        return self.b.call(self.w.sqrt_fn, [a])

    def c(self, value: float) -> Any:
        return self.w.const(value)

    def flag(self, name: str) -> Any:
        return self.fcmp("!=", self.get(name), self.c(0.0))

    def ret(self, task: int) -> None:
        self.b.ret(self.c(float(task)))

    # ---------------------------------------------------------------- the parts
    PARTS = ("start", "direction", "begin", "search", "trial", "accept", "failed")  # each a method _<part>

    def write(self) -> None:
        w, b = self.w, self.b
        self.blocks = {name: self.fn.append_basic_block(name) for name in self.PARTS}
        phase = b.fptosi(self.get("PHASE"), w.i64)
        switch = b.switch(phase, self.blocks["start"])
        switch.add_case(w.int(1), self.blocks["search"])
        switch.add_case(w.int(2), self.blocks["direction"])
        for name in self.PARTS:
            b.position_at_end(self.blocks[name])
            getattr(self, "_" + name)()

    def drop_memory(self) -> None:
        """No corrections kept; ``d = -g`` (at the last iterate)."""
        self.put("K", 0.0)
        self.put("HEAD", 0.0)
        self.call("neg", self.d, self.gold, self.n)

    def _start(self) -> None:
        """The start point's x, g and f kept; no corrections; along -g."""
        self.call("copy", self.xold, self.x, self.n)
        self.call("copy", self.gold, self.g, self.n)
        self.put("FOLD", self.get("F"))
        self.put("ITER", 0.0)
        self.put("STALL", 0.0)
        self.drop_memory()
        self.b.branch(self.blocks["begin"])

    def _direction(self) -> None:
        """``d = -H g`` by the two-loop recursion over the ``K`` corrections, newest first."""
        w, b = self.w, self.b
        stalled, go = self.fn.append_basic_block("stalled"), self.fn.append_basic_block("twoloop")
        b.cbranch(self.flag("STALL"), stalled, go)
        b.position_at_end(stalled)
        self.ret(LbfgsTask.STALLED)
        b.position_at_end(go)
        k = b.fptosi(self.get("K"), w.i64)
        head = b.fptosi(self.get("HEAD"), w.i64)
        self.call("copy", self.d, self.gold, self.n)

        def slot(j: Any) -> Any:  # the j-th newest correction's row
            return b.urem(b.sub(b.add(head, self.ring), b.add(j, w.int(1))), self.ring)

        with w.counted(b, w.int(0), k) as j:
            i = slot(j)
            rho = b.load(w.at(b, self.rho, i, w.f64), typ=w.f64)
            a = b.fmul(rho, self.dot(self.row(self.s, i), self.d))
            b.store(a, w.at(b, self.alpha, i, w.f64))
            self.call("axpy", self.d, b.fneg(a), self.row(self.y, i), self.n)
        gamma = self.sel(b.icmp_signed(">", k, w.int(0)), self.get("GAMMA"), self.c(1.0))
        self.call("scale", self.d, gamma, self.n)
        with w.counted(b, w.int(0), k) as jj:
            i = slot(b.sub(b.sub(k, w.int(1)), jj))  # oldest first
            rho = b.load(w.at(b, self.rho, i, w.f64), typ=w.f64)
            beta = b.fmul(rho, self.dot(self.row(self.y, i), self.d))
            a = b.load(w.at(b, self.alpha, i, w.f64), typ=w.f64)
            self.call("axpy", self.d, b.fsub(a, beta), self.row(self.s, i), self.n)
        self.call("neg", self.d, self.d, self.n)
        b.branch(self.blocks["begin"])

    def _begin(self) -> None:
        """A line search along ``d`` from the last iterate: dropping the corrections and going along
        ``-g`` where ``d`` is no descent direction; the first step ``1/|d|`` at the first iterate."""
        w, b = self.w, self.b
        gd = self.dot(self.gold, self.d)
        descent = self.fcmp("<", gd, self.c(0.0))
        retry, ready, none = (self.fn.append_basic_block(n) for n in ("retry", "ready", "nodescent"))
        has_memory = self.fcmp(">", self.get("K"), self.c(0.0))
        before = b.block
        b.cbranch(b.or_(descent, b.not_(has_memory)), ready, retry)
        b.position_at_end(retry)
        self.drop_memory()
        gd2 = self.dot(self.gold, self.d)
        b.branch(ready)
        b.position_at_end(ready)
        ginit = b.phi(w.f64)
        ginit.add_incoming(gd, before)
        ginit.add_incoming(gd2, retry)
        ok = self.fcmp("<", ginit, self.c(0.0))
        go = self.fn.append_basic_block("go")
        b.cbranch(ok, go, none)
        b.position_at_end(none)
        self.put("PHASE", 2.0)
        self.ret(LbfgsTask.NO_DESCENT)
        b.position_at_end(go)
        first = self.fcmp("==", self.get("ITER"), self.c(0.0))
        dnorm = self.sqrt(self.dot(self.d, self.d))
        stp = self.sel(first, self.min(b.fdiv(self.c(1.0), dnorm), self.c(STEP_MAX)), self.c(1.0))
        fold = self.get("FOLD")
        self.put("STP", stp)
        self.put("GINIT", ginit)
        self.put("GTEST", b.fmul(self.c(FTOL), ginit))
        self.put("WIDTH", STEP_MAX)
        self.put("WIDTH1", 2 * STEP_MAX)
        for name, value in (("STX", self.c(0.0)), ("FX", fold), ("GX", ginit), ("STY", self.c(0.0)),
                            ("FY", fold), ("GY", ginit), ("STMIN", self.c(0.0))):
            self.put(name, value)
        self.put("STMAX", b.fadd(stp, b.fmul(self.c(4.0), stp)))
        self.put("BRACKT", 0.0)
        self.put("STAGE", 1.0)
        self.put("NLS", 0.0)
        b.branch(self.blocks["trial"])

    def _trial(self) -> None:
        """``x = xold + stp·d``, to be evaluated."""
        self.call("lincomb", self.x, self.xold, self.get("STP"), self.d, self.n)
        self.put("PHASE", 1.0)
        self.ret(LbfgsTask.FG)

    def _search(self) -> None:
        """One evaluation of the line search: Moré-Thuente's test, then its next step."""
        b = self.b
        f, stp = self.get("F"), self.get("STP")
        gd = self.dot(self.g, self.d)
        self.put("NLS", b.fadd(self.get("NLS"), self.c(1.0)))
        finite = b.or_(self.fcmp("==", b.fsub(b.fadd(f, gd), b.fadd(f, gd)), self.c(0.0)),
                       self.fcmp("<=", f, self.get("UNBOUNDED")))
        test, shrink = self.fn.append_basic_block("test"), self.fn.append_basic_block("shrink")
        b.cbranch(finite, test, shrink)
        # A value or slope that is not finite: halve the step towards the best so far.
        b.position_at_end(shrink)
        stx = self.get("STX")
        self.put("STP", b.fadd(stx, b.fmul(self.c(0.5), b.fsub(stp, stx))))
        self.next_or_fail()
        b.position_at_end(test)
        ginit, gtest = self.get("GINIT"), self.get("GTEST")
        ftest = b.fadd(self.get("FOLD"), b.fmul(stp, gtest))
        stage = self.get("STAGE")
        to_two = b.and_(b.and_(self.fcmp("==", stage, self.c(1.0)), self.fcmp("<=", f, ftest)),
                        self.fcmp(">=", gd, self.c(0.0)))
        stage = self.sel(to_two, self.c(2.0), stage)
        self.put("STAGE", stage)
        brackt = self.flag("BRACKT")
        stmin, stmax = self.get("STMIN"), self.get("STMAX")
        reason = self.c(0.0)  # a warning's code (MINPACK-2's: rounding, x tolerance, largest, smallest step)
        checks = (
            (b.and_(brackt, b.or_(self.fcmp("<=", stp, stmin), self.fcmp(">=", stp, stmax))), 601),
            (b.and_(brackt, self.fcmp("<=", b.fsub(stmax, stmin), b.fmul(self.c(XTOL), stmax))), 604),
            (b.and_(self.fcmp("==", stp, self.c(STEP_MAX)),
                    b.and_(self.fcmp("<=", f, ftest), self.fcmp("<=", gd, gtest))), 602),
            (b.and_(self.fcmp("==", stp, self.c(0.0)),
                    b.or_(self.fcmp(">", f, ftest), self.fcmp(">=", gd, gtest))), 603),
        )
        for cond, code in checks:  # a later warning overrides an earlier one, as in dcsrch
            reason = self.sel(cond, self.c(float(code)), reason)
        converged = b.and_(self.fcmp("<=", f, ftest),
                           self.fcmp("<=", self.abs(gd), b.fmul(self.c(GTOL), b.fneg(ginit))))
        # f at or below the driver's "unbounded" line (-inf too) ends the search there: the driver stops
        below = self.fcmp("<=", f, self.get("UNBOUNDED"))
        ends = b.or_(b.or_(converged, self.fcmp("!=", reason, self.c(0.0))), below)
        move = self.fn.append_basic_block("move")
        b.cbranch(ends, self.blocks["accept"], move)
        b.position_at_end(move)
        self._next_step(f, gd, stp, stage, gtest)

    def _next_step(self, f: Any, gd: Any, stp: Any, stage: Any, gtest: Any) -> None:
        """dcsrch's update: dcstep on the values (modified by the test line in stage 1 where f
        is above it yet no higher than the best), bisection where the bracket shrinks too slowly,
        the step kept inside its bounds."""
        b = self.b
        fx, gx, fy, gy = self.get("FX"), self.get("GX"), self.get("FY"), self.get("GY")
        stx, sty = self.get("STX"), self.get("STY")
        modified = b.and_(b.and_(self.fcmp("==", stage, self.c(1.0)), self.fcmp("<=", f, fx)),
                          self.fcmp(">", f, self.b.fadd(self.get("FOLD"), b.fmul(stp, gtest))))

        def shift(value: Any, at: Any, slope: bool) -> Any:
            return self.sel(modified, b.fsub(value, gtest if slope else b.fmul(at, gtest)), value)

        fm, gm = shift(f, stp, False), shift(gd, stp, True)
        fxm, gxm = shift(fx, stx, False), shift(gx, stx, True)
        fym, gym = shift(fy, sty, False), shift(gy, sty, True)
        brackt = self.flag("BRACKT")
        stx, fxm, gxm, sty, fym, gym, stp, brackt = self._dcstep(
            stx, fxm, gxm, sty, fym, gym, stp, fm, gm, brackt, self.get("STMIN"), self.get("STMAX"))

        def unshift(value: Any, at: Any, slope: bool) -> Any:
            return self.sel(modified, b.fadd(value, gtest if slope else b.fmul(at, gtest)), value)

        self.put("STX", stx)
        self.put("STY", sty)
        self.put("FX", unshift(fxm, stx, False))
        self.put("GX", unshift(gxm, stx, True))
        self.put("FY", unshift(fym, sty, False))
        self.put("GY", unshift(gym, sty, True))
        self.put("BRACKT", b.uitofp(brackt, self.w.f64))
        width, width1 = self.get("WIDTH"), self.get("WIDTH1")
        gap = self.abs(b.fsub(sty, stx))
        bisect = b.and_(brackt, self.fcmp(">=", gap, b.fmul(self.c(0.66), width1)))
        stp = self.sel(bisect, b.fadd(stx, b.fmul(self.c(0.5), b.fsub(sty, stx))), stp)
        self.put("WIDTH1", self.sel(brackt, width, width1))
        self.put("WIDTH", self.sel(brackt, gap, width))
        out = b.fsub(stp, stx)
        stmin = self.sel(brackt, self.min(stx, sty), b.fadd(stp, b.fmul(self.c(1.1), out)))
        stmax = self.sel(brackt, self.max(stx, sty), b.fadd(stp, b.fmul(self.c(4.0), out)))
        self.put("STMIN", stmin)
        self.put("STMAX", stmax)
        stp = self.min(self.max(stp, self.c(0.0)), self.c(STEP_MAX))
        stuck = b.and_(brackt, b.or_(b.or_(self.fcmp("<=", stp, stmin), self.fcmp(">=", stp, stmax)),
                                     self.fcmp("<=", b.fsub(stmax, stmin), b.fmul(self.c(XTOL), stmax))))
        self.put("STP", self.sel(stuck, stx, stp))
        self.next_or_fail()

    def next_or_fail(self) -> None:
        """The next trial point, or a failed search after :data:`LBFGS_LINE_STEPS` evaluations."""
        b = self.b
        spent = self.fcmp(">=", self.get("NLS"), self.c(float(LBFGS_LINE_STEPS)))
        out = self.fn.append_basic_block("spent")
        b.cbranch(spent, out, self.blocks["trial"])
        b.position_at_end(out)
        b.branch(self.blocks["failed"])

    def _dcstep(self, stx: Any, fx: Any, dx: Any, sty: Any, fy: Any, dy: Any, stp: Any, fp: Any, dp: Any,
                brackt: Any, stpmin: Any, stpmax: Any) -> tuple[Any, ...]:
        """MINPACK-2's dcstep (Moré and Thuente's safeguarded step): the four cases computed
        alike and chosen by selects (each is arithmetic only; the unchosen ones' NaNs are dropped)."""
        b, c = self.b, self.c
        sgnd = b.fmul(dp, b.fdiv(dx, self.abs(dx)))
        three = c(3.0)

        def cubic(fa: Any, fb: Any, ta: Any, tb: Any, d0: Any, d1: Any, clamp: bool) -> tuple[Any, Any]:
            # theta and gamma of the cubic interpolating two points, in dcstep's order of operations
            theta = b.fadd(b.fadd(b.fdiv(b.fmul(three, b.fsub(fa, fb)), b.fsub(tb, ta)), d0), d1)
            s = self.max(self.max(self.abs(theta), self.abs(d0)), self.abs(d1))
            ts = b.fdiv(theta, s)
            inner = b.fsub(b.fmul(ts, ts), b.fmul(b.fdiv(d0, s), b.fdiv(d1, s)))
            if clamp:
                inner = self.max(c(0.0), inner)
            return theta, b.fmul(s, self.sqrt(inner))

        # case 1: a higher value
        theta, gamma = cubic(fx, fp, stx, stp, dx, dp, False)
        gamma = self.sel(self.fcmp("<", stp, stx), b.fneg(gamma), gamma)
        p = b.fadd(b.fsub(gamma, dx), theta)
        q = b.fadd(b.fadd(b.fsub(gamma, dx), gamma), dp)
        stpc = b.fadd(stx, b.fmul(b.fdiv(p, q), b.fsub(stp, stx)))
        stpq = b.fadd(stx, b.fmul(b.fdiv(b.fdiv(dx, b.fadd(b.fdiv(b.fsub(fx, fp), b.fsub(stp, stx)), dx)),
                                         c(2.0)), b.fsub(stp, stx)))
        case1 = self.sel(self.fcmp("<", self.abs(b.fsub(stpc, stx)), self.abs(b.fsub(stpq, stx))), stpc,
                         b.fadd(stpc, b.fdiv(b.fsub(stpq, stpc), c(2.0))))
        # case 2: lower, and the slopes' signs differ
        theta, gamma = cubic(fx, fp, stx, stp, dx, dp, False)
        gamma = self.sel(self.fcmp(">", stp, stx), b.fneg(gamma), gamma)
        p = b.fadd(b.fsub(gamma, dp), theta)
        q = b.fadd(b.fadd(b.fsub(gamma, dp), gamma), dx)
        stpc = b.fadd(stp, b.fmul(b.fdiv(p, q), b.fsub(stx, stp)))
        secant = b.fadd(stp, b.fmul(b.fdiv(dp, b.fsub(dp, dx)), b.fsub(stx, stp)))
        case2 = self.sel(self.fcmp(">", self.abs(b.fsub(stpc, stp)), self.abs(b.fsub(secant, stp))), stpc, secant)
        # case 3: lower, same sign, the slope's size decreasing
        theta, gamma = cubic(fx, fp, stx, stp, dx, dp, True)
        gamma = self.sel(self.fcmp(">", stp, stx), b.fneg(gamma), gamma)
        p = b.fadd(b.fsub(gamma, dp), theta)
        q = b.fadd(b.fadd(gamma, b.fsub(dx, dp)), gamma)
        r = b.fdiv(p, q)
        stpc = self.sel(b.and_(self.fcmp("<", r, c(0.0)), self.fcmp("!=", gamma, c(0.0))),
                        b.fadd(stp, b.fmul(r, b.fsub(stx, stp))),
                        self.sel(self.fcmp(">", stp, stx), stpmax, stpmin))
        nearer = self.sel(self.fcmp("<", self.abs(b.fsub(stpc, stp)), self.abs(b.fsub(secant, stp))), stpc, secant)
        toward = b.fadd(stp, b.fmul(c(0.66), b.fsub(sty, stp)))
        bracketed = self.sel(self.fcmp(">", stp, stx), self.min(toward, nearer), self.max(toward, nearer))
        farther = self.sel(self.fcmp(">", self.abs(b.fsub(stpc, stp)), self.abs(b.fsub(secant, stp))), stpc, secant)
        open_ = self.max(stpmin, self.min(stpmax, farther))
        case3 = self.sel(brackt, bracketed, open_)
        # case 4: lower, same sign, the slope's size not decreasing
        theta, gamma = cubic(fp, fy, stp, sty, dy, dp, False)
        gamma = self.sel(self.fcmp(">", stp, sty), b.fneg(gamma), gamma)
        p = b.fadd(b.fsub(gamma, dp), theta)
        q = b.fadd(b.fadd(b.fsub(gamma, dp), gamma), dy)
        case4 = self.sel(brackt, b.fadd(stp, b.fmul(b.fdiv(p, q), b.fsub(sty, stp))),
                         self.sel(self.fcmp(">", stp, stx), stpmax, stpmin))
        higher = self.fcmp(">", fp, fx)
        crossed = self.fcmp("<", sgnd, c(0.0))
        shrinking = self.fcmp("<", self.abs(dp), self.abs(dx))
        stpf = self.sel(higher, case1, self.sel(crossed, case2, self.sel(shrinking, case3, case4)))
        brackt = b.or_(brackt, b.or_(higher, crossed))
        # the interval: the new point replaces one end
        new_sty = self.sel(higher, stp, self.sel(crossed, stx, sty))
        new_fy = self.sel(higher, fp, self.sel(crossed, fx, fy))
        new_dy = self.sel(higher, dp, self.sel(crossed, dx, dy))
        new_stx = self.sel(higher, stx, stp)
        new_fx = self.sel(higher, fx, fp)
        new_dx = self.sel(higher, dx, dp)
        return new_stx, new_fx, new_dx, new_sty, new_fy, new_dy, stpf, brackt

    def _accept(self) -> None:
        """The line search ended (its conditions met, or a warning): the correction kept (where
        its curvature is positive enough), the iterate becomes the last one (stalled where f is not
        lower), and the driver's tests prepared."""
        w, b = self.w, self.b
        head = b.fptosi(self.get("HEAD"), w.i64)
        s_row, y_row = self.row(self.s, head), self.row(self.y, head)
        self.call("sub", s_row, self.x, self.xold, self.n)
        self.call("sub", y_row, self.g, self.gold, self.n)
        sy, yy, ss = self.dot(s_row, y_row), self.dot(y_row, y_row), self.dot(s_row, s_row)
        keep = self.fcmp(">", sy, b.fmul(self.c(EPS), b.fneg(b.fmul(self.get("STP"), self.get("GINIT")))))
        kept, on = self.fn.append_basic_block("kept"), self.fn.append_basic_block("on")
        b.cbranch(keep, kept, on)
        b.position_at_end(kept)
        b.store(b.fdiv(self.c(1.0), sy), w.at(b, self.rho, head, w.f64))
        self.put("GAMMA", b.fdiv(sy, yy))
        nxt = b.urem(b.add(head, w.int(1)), self.ring)
        self.put("HEAD", b.sitofp(nxt, w.f64))
        self.put("K", self.min(b.fadd(self.get("K"), self.c(1.0)), b.sitofp(self.m, w.f64)))
        b.branch(on)
        b.position_at_end(on)
        self.call("copy", self.xold, self.x, self.n)
        self.call("copy", self.gold, self.g, self.n)
        f = self.get("F")
        self.put("STALL", b.uitofp(b.not_(self.fcmp("<", f, self.get("FOLD"))), w.f64))
        self.put("FOLD", f)
        self.put("ITER", b.fadd(self.get("ITER"), self.c(1.0)))
        gg, xx = self.dot(self.g, self.g), self.dot(self.x, self.x)
        self.put("GG", gg)
        self.put("XX", xx)
        self.put("SS", ss)
        self.put("PHASE", 2.0)
        reach = b.fmul(self.get("XTOL_STOP"), b.fadd(self.c(1.0), self.sqrt(xx)))
        maybe = b.or_(
            b.or_(self.fcmp("<=", f, self.get("UNBOUNDED")), b.not_(self.fcmp("==", b.fsub(gg, gg), self.c(0.0)))),
            b.or_(b.or_(self.fcmp("<=", gg, self.get("TOL2")), self.fcmp(">=", xx, self.get("BIG_X2"))),
                  self.fcmp("<=", ss, b.fmul(reach, reach))))
        maybe = b.or_(b.or_(maybe, b.not_(self.fcmp("==", b.fsub(f, f), self.c(0.0)))), self.flag("STALL"))
        b.ret(self.sel(maybe, self.c(float(LbfgsTask.NEW_X_CHECK)), self.c(float(LbfgsTask.NEW_X))))

    def _failed(self) -> None:
        """A failed line search: with corrections, they are dropped and the search starts again
        along -g from the last iterate (x, g and f restored); without, the run ends."""
        b = self.b
        self.call("copy", self.x, self.xold, self.n)
        self.call("copy", self.g, self.gold, self.n)
        self.put("F", self.get("FOLD"))
        again, end = self.fn.append_basic_block("again"), self.fn.append_basic_block("end")
        b.cbranch(self.fcmp(">", self.get("K"), self.c(0.0)), again, end)
        b.position_at_end(again)
        self.drop_memory()
        b.branch(self.blocks["begin"])
        b.position_at_end(end)
        self.put("PHASE", 2.0)
        self.ret(LbfgsTask.FAILED)


def lbfgs_ir(data_offset: int | None) -> str:
    """The module's IR: ``step(w, x, g)``, and (where NumPy's layout is known, ``data_offset``
    bytes into an array object) ``call(w, x, g)`` on two arrays' data and its builtin entry ``fast``
    (:func:`symad.native.fastcall.fast_entry_ir`)."""
    w = _Writer()
    kernels = _kernels(w)
    _Step(w, kernels).write()
    text = str(w.module)
    if data_offset is None:
        return text
    return text + (
        "\ndefine double @call(ptr %w, ptr %xo, ptr %go) {\nentry:\n"
        f"  %xa = getelementptr i8, ptr %xo, i64 {data_offset}\n  %x = load ptr, ptr %xa\n"
        f"  %ga = getelementptr i8, ptr %go, i64 {data_offset}\n  %g = load ptr, ptr %ga\n"
        "  %t = call double @step(ptr %w, ptr %x, ptr %g)\n  ret double %t\n}\n" + fast_entry_ir(with_context=True))
