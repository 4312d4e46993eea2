"""C99 source of an expression, its gradient and Hessian, for programs without symad.

:func:`c_source` writes a self-contained C99 file and its header: straight-line code from the
same schedule and the same op lowerings as the native backend
(:mod:`symad.tools.exporters.straight_line`), the same bits.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from symad import __version__
from symad.core import binders
from symad.core.errors import SymadError
from symad.core.names import compact
from symad.expr import Expr
from symad.tools.exporters.loop_source import LoopWriter, checked_layout
from symad.tools.exporters.outputs import comment, exported_schedule
from symad.tools.exporters.straight_line import C, straight_line

_C_NAME = re.compile(r"[A-Za-z_][A-Za-z_0-9]{0,62}")
# A header the C file includes: a plain file name (no path, quote, backslash or newline to escape).
_HEADER = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.+-]{0,200}\.h")
# Names a C function may not take: keywords (C23's too), and what the headers the file
# includes (<math.h>, <stdint.h>, <string.h>) and a program using it likely includes
# (<stdlib.h>, <stddef.h>) declare or reserve, GNU's extensions among them.
_C_KEYWORDS = frozenset("""
    asm auto bool break case char const constexpr continue default do double else enum extern false float for
    fortran goto if inline int long main nullptr register restrict return short signed sizeof static
    static_assert struct switch thread_local true typedef typeof typeof_unqual union unsigned void volatile while
    alignas alignof""".split())
# Each also with the suffixes of <math.h>'s other types (sinf, sinl, sinf128, ...).
_C_MATH = frozenset("""
    acos acosh acospi asin asinh asinpi atan atan2 atan2pi atanh atanpi canonicalize cbrt ceil compoundn copysign
    cos cosh cospi drem erf erfc exp exp10 exp10m1 exp2 exp2m1 expm1 fabs fadd fdim fdiv ffma finite floor fma
    fmax fmaximum fmaximum_mag fmaximum_num fmaxmag fmin fminimum fminimum_mag fminimum_num fminmag fmod fmul
    frexp fromfp fromfpx fsqrt fsub gamma getpayload hypot ilogb isinf isnan j0 j1 jn ldexp lgamma lgamma_r
    llogb llrint llround log log10 log10p1 log1p log2 log2p1 logb logp1 lrint lround modf nan nearbyint
    nextafter nextdown nexttoward nextup pow pow10 pown powr remainder remquo rint rootn round roundeven rsqrt
    scalb scalbln scalbn setpayload setpayloadsig significand sin sincos sinh sinpi sqrt tan tanh tanpi tgamma
    totalorder totalordermag trunc ufromfp ufromfpx y0 y1 yn""".split())
_C_MATH_SUFFIXES = ("", "f", "l", "f16", "f32", "f64", "f128", "f32x", "f64x", "f128x")
_C_LIBRARY = frozenset("""
    INFINITY NAN NULL MATH_ERREXCEPT MATH_ERRNO math_errhandling signgam fpclassify isfinite isnormal signbit
    isgreater isgreaterequal isless islessequal islessgreater isunordered issignaling iscanonical issubnormal
    iszero iseqsig lgammaf_r lgammal_r offsetof EXIT_FAILURE EXIT_SUCCESS BIG_ENDIAN BYTE_ORDER LITTLE_ENDIAN
    PDP_ENDIAN linux unix
    abort abs aligned_alloc alloca at_quick_exit atexit atof atoi atol atoll bsearch calloc div exit free
    getenv labs ldiv llabs lldiv malloc mblen mbstowcs mbtowc qsort quick_exit rand realloc srand system
    wcstombs wctomb a64l arc4random arc4random_buf arc4random_uniform bcmp bcopy bzero clearenv drand48
    drand48_r ecvt ecvt_r erand48 erand48_r explicit_bzero fcvt fcvt_r ffs ffsl ffsll gcvt getloadavg getsubopt
    index initstate initstate_r jrand48 jrand48_r l64a lcong48 lcong48_r lrand48 lrand48_r mkdtemp mkstemp
    mkstemps mktemp mrand48 mrand48_r nrand48 nrand48_r on_exit posix_memalign pselect putenv qecvt qecvt_r
    qfcvt qfcvt_r qgcvt rand_r random random_r reallocarray realpath rindex rpmatch seed48 seed48_r select
    setenv setstate setstate_r srand48 srand48_r srandom srandom_r stpcpy stpncpy unsetenv valloc
    fd_mask fd_set u_char u_int u_long u_short uint ulong ushort NFDBITS FD_CLR FD_ISSET FD_SET FD_SETSIZE FD_ZERO
    WCONTINUED WEXITED WEXITSTATUS WIFCONTINUED WIFEXITED WIFSIGNALED WIFSTOPPED WNOHANG WNOWAIT WSTOPPED
    WSTOPSIG WTERMSIG WUNTRACED be16toh be32toh be64toh htobe16 htobe32 htobe64 htole16 htole32 htole64
    le16toh le32toh le64toh""".split()) | {b + s for b in _C_MATH for s in _C_MATH_SUFFIXES}
# Reserved names, and why.
_C_RESERVED = tuple((re.compile(pattern), why) for pattern, why in (
    (r"_\w*", "a leading _ is reserved at file scope"),
    (r"\w*__\w*", "a double _ is reserved"),
    (r"\w*_t", "names ending in _t are reserved (POSIX's types: size_t, uint64_t)"),
    (r"(str|mem|wcs)[a-z]\w*", "str*, mem* and wcs* are reserved for <string.h> and <stdlib.h>"),
    (r"cr_[a-z]\w*", "cr_* are reserved for <math.h>"),
    (r"symad_\w*", "symad_* are the generated helpers' names"),
    (r"M_\w+|FP_\w+|HUGE_VAL\w*|[A-Z][A-Z0-9_]*_(MAX|MIN|WIDTH)|U?INT\w*_C",
     "the C library's macros are named so (M_PI, FP_NAN, SIZE_MAX, INT64_C)")))


def c_name_problem(name: str) -> str | None:
    """Why ``name`` cannot be a generated C function's name (None if it can).

    >>> c_name_problem("rosen") is None, c_name_problem("sin")
    (True, "'sin' is a name of the C library (<math.h>, <stdint.h>, <string.h>, <stdlib.h>)")
    """
    if not isinstance(name, str) or not _C_NAME.fullmatch(name):
        return f"{name!r} is not a C identifier (a letter, then letters, digits and _; at most 63)"
    if name in _C_KEYWORDS:
        return f"{name!r} is a C keyword"
    if name in _C_LIBRARY:
        return f"{name!r} is a name of the C library (<math.h>, <stdint.h>, <string.h>, <stdlib.h>)"
    return next((f"{name!r} is reserved in C: {why}" for pattern, why in _C_RESERVED if pattern.fullmatch(name)),
                None)


def c_source(expr: Expr, name: str = "f", grad: bool = False, hessian: bool = False,
             variables: Sequence[str] | None = None, header: str | None = None) -> tuple[str, str]:
    """C99 source ``(file, header)`` of ``double name(const double *x[, double *grad[, double *hess]])``.

    ``x`` holds the variables in ``variables`` order (default: the expression's); ``grad``
    receives the n partials and ``hess`` the n×n Hessian, row by row (either may be NULL).
    ``header`` is the header's file name the C file includes (default ``name.h``).
    """
    problem = c_name_problem(name)
    if problem:
        raise SymadError(f"the C function's name: {problem}; choose another (--name)")
    header = name + ".h" if header is None else header
    if not _HEADER.fullmatch(header):
        raise SymadError(f"the header's file name {header!r} is not a plain name ending in .h (letters, digits, "
                         "'_', '-', '.', '+'): it is written into the C file's #include")
    if expr.graph.scoped and binders.has_scoped(expr.graph, [expr.id]):
        return _c_loops(expr, name, grad, hessian, variables, header)
    names, schedule = exported_schedule(expr, variables, grad or hessian, hessian)
    n = len(names)
    grad = grad or hessian
    lines, results, helpers = straight_line(schedule, C)

    params = ["const double *x"] + (["double *grad"] if grad else []) + (["double *hess"] if hessian else [])
    signature = f"double {name}({', '.join(params)})"
    order = ", ".join(f"x[{k}] = {v}" for k, v in enumerate(names)) if n <= 12 else (
        f"x[0..{n - 1}] = {', '.join(compact(names))}")
    doc = [f"/* {name}: generated by symad {__version__} from", f" *   {comment(str(expr))}",
           f" * Inputs: {comment(order)}."]
    if grad:
        doc.append(f" * grad (if not NULL) receives the {n} partial derivatives, in the same order.")
    if hessian:
        doc.append(f" * hess (if not NULL) receives the {n}x{n} Hessian, row by row.")
    doc.append(" * Straight-line IEEE double arithmetic and C99 <math.h>: compile without -ffast-math")
    doc.append(" * (and with -ffp-contract=off for the same bits as symad). */")
    guard = f"SYMAD_{name.upper()}_H"
    h_text = "\n".join([*doc, f"#ifndef {guard}", f"#define {guard}", "", f"{signature};", "",
                        f"#endif /* {guard} */", ""])

    body = ["    " + ln for ln in lines]
    if grad:
        body.append("    if (grad) {")
        body += [f"        grad[{k}] = {results[1 + k]};" for k in range(n)]
        body.append("    }")
    if hessian:
        body.append("    if (hess) {")
        body += [f"        hess[{k}] = {results[1 + n + k]};" for k in range(n * n)]
        body.append("    }")
    body.append(f"    return {results[0]};")
    if not names:
        body.insert(0, "    (void)x;")
    c_text = "\n".join([*doc, "#include <math.h>", "#include <stdint.h>", "#include <string.h>",
                        f'#include "{header}"', "", *helpers, *([""] if helpers else []),
                        signature, "{", *body, "}", ""])
    return c_text, h_text


def _c_loops(expr: Expr, name: str, grad: bool, hessian: bool, variables: Sequence[str] | None,
             header: str) -> tuple[str, str]:
    """:func:`c_source` of an expression with sums kept as loops: C loops, the same bits."""
    at = checked_layout(expr, name, grad, hessian, variables, c_name_problem, "C")
    writer = LoopWriter(at, C)
    lines, value = writer.body()
    params = ["const double *x", *(f"const double *{d}" for d in at.data), *(["double *grad"] if grad else [])]
    signature = f"double {name}({', '.join(params)})"
    doc = [f"/* {name}: generated by symad {__version__} from", f" *   {comment(str(expr))}",
           f" * Inputs: x[0..{at.size - 1}] = {comment(', '.join(at.labels()))} ({at.size} numbers, in this order)."]
    doc += [f" * {d}: data, {at.shape(d)} numbers, row by row." for d in at.data]
    if grad:
        doc.append(f" * grad (if not NULL) receives the {at.size} partial derivatives, in the order of x.")
    doc.append(" * Sums and products are loops, in symad's order (blocks of 8192 terms, a sum's in lanes,")
    doc.append(" * a product's left to right; the blocks' sums pairwise, their products as a tree of pairs):")
    doc.append(" * compile without -ffast-math, with -ffp-contract=off for symad's bits. */")
    guard = f"SYMAD_{name.upper()}_H"
    size = f"#define {name.upper()}_SIZE {at.size}"
    h_text = "\n".join([*doc, f"#ifndef {guard}", f"#define {guard}", "", size, "", f"{signature};", "",
                        f"#endif /* {guard} */", ""])
    helpers = writer.helpers()
    body = [*lines, f"    return {value};"]
    c_text = "\n".join([*doc, "#include <math.h>", "#include <stdint.h>", "#include <stdlib.h>", "#include <string.h>",
                        f'#include "{header}"', "", *[p for h in helpers for p in (h, "")],
                        signature, "{", *body, "}", ""])
    return c_text, h_text
