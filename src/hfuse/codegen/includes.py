"""What the fused file includes.

The front end puts only device-side code into the fused file; the ``#include`` lines of
toolkit and system headers reach code generation as their text (``#include <stdio.h>``).
The fused file must compile with nvcc (the user's build) *and* with NVRTC (``hfuse
tune``). NVRTC has no C or C++ standard library and no host headers: it declares the
CUDA built-ins itself (vector types, math functions, ``printf``, ``assert``, ``malloc``,
``memcpy``, ``clock``, even ``std::move``/``std::forward``) and reads only the headers on
its ``-I`` path (``hfuse.runtime.compile.cuda_include_dirs()``: the toolkit's ``include``
and ``include/cccl``, pip's ``nvidia/cu13/include``). ``plan_includes`` sorts each line
into one of five kinds. Every decision below comes from compiling, with nvcc 13.0
(``-arch=sm_90 -cubin``) and NVRTC 13.0 (sm_90), a kernel that uses the header, behind
the planned lines; ``tests/codegen/test_includes.py`` does it again for each row.

KEEP -- as written, for both compilers (device headers NVRTC reads as they are):
    cuda_fp16.h, cuda_bf16.h, cuda_fp8.h     half / bfloat16 / fp8 types and intrinsics
    cuda_fp6.h, cuda_fp4.h                   fp6 / fp4 types (NVRTC declares none of these)
    cuComplex.h                              cuFloatComplex, cuCmulf...
    mma.h                                    nvcuda::wmma (sm_70+)
    math_constants.h                         CUDART_PI_F...: macros only
    curand_kernel.h                          device RNG; has its own NVRTC paths (from the
                                             toolkit, or pip's nvidia-curand)
    cooperative_groups.h, cooperative_groups/*   (reduce.h, scan.h...)
    cub/block/*, cub/warp/*, cub/thread/*, cub/iterator/*, cub/grid/*, cub/config.cuh,
    cub/util_*.cuh but util_allocator.cuh    block- and warp-level cub compiles under NVRTC
    cuda/* (libcu++: cuda/std/*, cuda/atomic...), nv/target, cuda_pipeline.h,
    cuda_awbarrier.h and their _primitives.h and _helpers.h, vector_types.h,
    vector_functions.h, device_launch_parameters.h, sm_*_intrinsics.h
    an installed library's header (``-isystem``) whose declarations the kernels' device
    code uses, as Clang found (``library_device_includes``): without it NVRTC cannot
    compile them at all

STAND-IN -- ``#ifdef __CUDACC_RTC__`` <what NVRTC can read> ``#else`` <the original line>
``#endif``. nvcc compiles exactly what the original had. Under NVRTC:
    header                 NVRTC includes         and gets too (libcu++ lacks it there)
    cstdint, stdint.h      cuda/std/cstdint       std::uint32_t... (plain uint32_t and
                                                  UINT32_MAX come with cuda/std)
    cstddef, stddef.h      cuda/std/cstddef       std::size_t, ptrdiff_t, nullptr_t
    climits, limits.h      cuda/std/climits       -- (it defines INT_MAX, CHAR_BIT...)
    cfloat, float.h        cuda/std/cfloat        FLT_MAX, FLT_EPSILON, DBL_MAX...: under
                                                  NVRTC libcu++ defines none; gcc's values
    cmath, math.h          cuda/std/cmath         std::sqrt... as NVRTC's built-in ::sqrt
                           (INFINITY, NAN)        ...; M_PI... (glibc's), HUGE_VAL(F)
    cstdlib, stdlib.h      cuda/std/cstdlib       std::abs, labs, llabs (the built-ins)
    cassert, assert.h      cuda/std/cassert       -- (assert is an NVRTC built-in)
    type_traits            cuda/std/type_traits   std::is_same, enable_if_t... (a list)
    limits                 cuda/std/limits        std::numeric_limits
    utility                cuda/std/utility       std::pair, make_pair, swap... (not move
                                                  and forward: NVRTC declares those)
    array, tuple,          cuda/std/array, tuple, std::array; tuple, make_tuple, get, tie;
    functional             functional             plus, less..., invoke, ref (tuple_size
                                                  and tuple_element: NVRTC's own)
    algorithm              cuda/std/__algorithm/  std::min, max, clamp, minmax (libcu++ has
                           min.h, max.h...        no public <cuda/std/algorithm>)
    cub/cub.cuh            CUB_FOR_NVRTC          -- (every header of cub.cuh but the
                                                  device-wide algorithms of cub/device/*
                                                  and util_allocator.cuh: host API that
                                                  fails under NVRTC)
  The ``std::`` names are using-declarations emitted once (``namespace std { using
  ::cuda::std::numeric_limits; using ::sqrt; }``), on purpose not ``namespace std { using
  namespace ::cuda::std; }``: that makes ``sqrt(x)``, ``pow(x, y)``, ``abs(i)`` ambiguous
  (NVRTC's built-in ``::sqrt`` against ``cuda::std::sqrt``) wherever ``using namespace
  std;`` is in effect, with ``cooperative_groups.h`` alone already. Math in ``std`` is
  NVRTC's global built-ins, as libstdc++'s ``<cmath>`` does (``using ::sqrt;``), so both
  spellings name one function. (Under nvcc, device code calling libstdc++'s constexpr
  functions, ``std::numeric_limits<T>::max()`` or ``std::make_pair``, needs
  ``--expt-relaxed-constexpr``, as the original did; NVRTC's libcu++ needs nothing.)

NVCC ONLY -- kept under ``#ifndef __CUDACC_RTC__``: cstdio, stdio.h (device ``printf``),
cstring, string.h (``memcpy``, ``memset``), ctime, time.h (``clock``). NVRTC declares
these functions itself and has no such headers. They are not dropped although host code
uses them too: nvcc declares device ``printf`` without them, but ``std::printf`` needs
``<cstdio>``, and keeping them costs nothing.

DROPPED -- host-only, left out and listed in ``IncludePlan.dropped`` (for the header
comment): the C++ library's streams, strings, containers, threads, time, files and
exceptions (iostream, sstream, fstream, iomanip, string, vector, map, set, chrono, thread,
mutex, random, stdexcept...), POSIX and host-library headers (unistd.h, sys/*, omp.h,
mpi.h...), the CUDA host APIs (cuda_runtime.h, cuda_runtime_api.h, cuda.h,
cuda_profiler_api.h, curand.h, cublas*, cufft*, cusparse*, cusolver*, cudnn.h, nccl.h,
nvrtc.h, nvToolsExt.h, nvtx3/*) and the CUDA samples' host helpers (helper_cuda.h,
helper_functions.h, helper_string.h, helper_timer.h, helper_image.h). Device code uses
nothing of them: nvcc includes cuda_runtime.h implicitly, NVRTC has its device part
built in. The CUDA libraries' headers (cuBLAS, cuSPARSE, cuSOLVER, cuDNN, NCCL) include
``cuda_fp16.h`` and ``cuda_bf16.h``: where one is dropped and the code uses half or
bfloat16 names, those two are included in its stead; where the code uses the fixed-width
integers (``uint32_t``) and no kept line declares them, ``<cstdint>`` is. One exception: ``cuda.h`` (or ``cudaTypedefs.h``) where the fused code names
the driver's ``CUtensorMap`` (a TMA descriptor a Hopper kernel takes as a
``__grid_constant__`` parameter) is kept for nvcc, and NVRTC gets the same type declared
(128-byte aligned, 16 opaque 64-bit words, as in ``cuda.h``).

UNKNOWN -- any other header (thrust/*, algorithm, Eigen/Core...): kept for nvcc, which
compiled the original with it, and left out under NVRTC, which most likely cannot read it
(``#ifndef __CUDACC_RTC__``); listed in ``IncludePlan.unknown`` so the header comment can
say so. If the kernels need it, ``hfuse tune`` fails with NVRTC's log naming what is
missing. Quoted user headers never reach here (the front end inlines them); a quoted
toolkit name (``"cuda_runtime.h"``) is sorted by its name like an angle-bracket one.

The lines keep the input's order (duplicates dropped by header name); consecutive lines
of one kind share one ``#if`` block.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

from ..toolkit import cuda_include_dirs

RTC = "__CUDACC_RTC__"


@dataclass(frozen=True)
class IncludePlan:
    lines: tuple[str, ...]
    """What the fused file includes, in order (may contain ``#if __CUDACC_RTC__`` blocks)."""
    dropped: tuple[str, ...]
    """Include lines left out (host-only headers), for the output's header comment."""
    unknown: tuple[str, ...] = ()
    """Include lines of headers hfuse does not know: kept for nvcc, left out under NVRTC."""


# --------------------------------------------------------------------------- the table
_KEEP = frozenset({
    "cuda_fp16.h", "cuda_bf16.h", "cuda_fp8.h", "mma.h", "math_constants.h", "curand_kernel.h",
    "cooperative_groups.h", "cuda_pipeline.h", "cuda_awbarrier.h", "vector_types.h", "vector_functions.h",
    "device_launch_parameters.h", "cuComplex.h", "cuda_fp4.h", "cuda_fp6.h", "cuda_pipeline_primitives.h",
    "cuda_pipeline_helpers.h", "cuda_awbarrier_primitives.h", "cuda_awbarrier_helpers.h",
})
_KEEP_PREFIXES = ("cooperative_groups/", "cub/block/", "cub/warp/", "cub/thread/", "cub/iterator/", "cub/grid/",
                  "cuda/", "nv/")
_KEEP_RE = re.compile(r"sm_\d+_intrinsics\.h|cub/util_(?!allocator)\w+\.cuh|cub/config\.cuh")

_NVCC_ONLY = frozenset({"cstdio", "stdio.h", "cstring", "string.h", "ctime", "time.h"})

_DROP = frozenset({
    # C++ library: streams, strings, containers, threads, time, files
    "iostream", "istream", "ostream", "fstream", "sstream", "iomanip", "ios", "iosfwd", "streambuf", "string",
    "string_view", "vector", "list", "forward_list", "deque", "map", "set", "unordered_map", "unordered_set",
    "queue", "stack", "chrono", "thread", "mutex", "shared_mutex", "condition_variable", "future", "random",
    "regex", "filesystem", "exception", "stdexcept", "locale", "codecvt", "csignal", "signal.h", "cerrno",
    "errno.h",
    # POSIX and other host-only libraries
    "unistd.h", "getopt.h", "dirent.h", "fcntl.h", "pthread.h", "omp.h", "mpi.h", "windows.h",
    # CUDA host APIs and the CUDA samples' host helpers
    "cuda_runtime.h", "cuda_runtime_api.h", "cuda.h", "cudaTypedefs.h", "cuda_profiler_api.h", "cudaProfiler.h",
    "curand.h", "cublas.h", "cublas_v2.h", "cublasLt.h", "cufft.h", "cufftXt.h", "cusparse.h", "cusparse_v2.h",
    "cusolverDn.h", "cusolverSp.h", "cudnn.h", "nccl.h", "nvrtc.h", "nvToolsExt.h", "nvml.h",
    "helper_cuda.h", "helper_functions.h", "helper_string.h", "helper_timer.h", "helper_image.h",
    "cuda_gl_interop.h", "cuda_egl_interop.h",
})
_DROP_PREFIXES = ("sys/", "nvtx3/")
_BRING_HALF_TYPES = frozenset({"cublas.h", "cublas_v2.h", "cublasLt.h", "cusparse.h", "cusparse_v2.h", "cusolverDn.h",
                               "cusolverSp.h", "cudnn.h", "nccl.h"})
"""Host headers that include ``cuda_fp16.h`` and ``cuda_bf16.h``: code that uses their
types, reaching them through one of these only, gets them included in its stead."""
_HALF_NAME = re.compile(r"half|bfloat16")
_INT_HEADERS = frozenset({"cstdint", "stdint.h", "cinttypes", "inttypes.h"})
"""Headers that declare the fixed-width integers (``uint32_t``). A dropped host header may
have been where the code took them from (``cuda.h`` includes ``stdint.h``; libstdc++'s
``<iostream>`` ``<cstdint>``): where no kept line declares them, ``<cstdint>`` stands in."""
_DRIVER_HEADERS = frozenset({"cuda.h", "cudaTypedefs.h"})
_DRIVER_DEVICE_TYPES = frozenset({"CUtensorMap", "CUtensorMap_st"})
"""What device code may take of the driver API's headers: TMA descriptors."""
_TENSOR_MAP = "typedef struct CUtensorMap_st { alignas(128) unsigned long long opaque[16]; } CUtensorMap;"

# NVRTC: libcu++ header standing in, and which extras (below) it needs.
_LIBCUXX: dict[str, tuple[str, tuple[str, ...]]] = {
    "cstdint": ("cuda/std/cstdint", ("ints",)),
    "stdint.h": ("cuda/std/cstdint", ("ints",)),
    "cstddef": ("cuda/std/cstddef", ()),
    "stddef.h": ("cuda/std/cstddef", ()),
    "climits": ("cuda/std/climits", ()),
    "limits.h": ("cuda/std/climits", ()),
    "cfloat": ("cuda/std/cfloat", ("float_macros",)),
    "float.h": ("cuda/std/cfloat", ("float_macros",)),
    "cmath": ("cuda/std/cmath", ("math", "math_macros")),
    "math.h": ("cuda/std/cmath", ("math", "math_macros")),
    "cstdlib": ("cuda/std/cstdlib", ("abs",)),
    "stdlib.h": ("cuda/std/cstdlib", ("abs",)),
    "cassert": ("cuda/std/cassert", ()),
    "assert.h": ("cuda/std/cassert", ()),
    "type_traits": ("cuda/std/type_traits", ("type_traits",)),
    "limits": ("cuda/std/limits", ("limits",)),
    "utility": ("cuda/std/utility", ("utility",)),
    "array": ("cuda/std/array", ("array",)),
    "tuple": ("cuda/std/tuple", ("tuple",)),
    "functional": ("cuda/std/functional", ("functional",)),
    # libcu++ has no public <cuda/std/algorithm>: what device code takes of <algorithm>
    "algorithm": ("cuda/std/__algorithm/min.h cuda/std/__algorithm/max.h cuda/std/__algorithm/clamp.h "
                  "cuda/std/__algorithm/minmax.h", ("algorithm",)),
}

# <cub/cub.cuh> under NVRTC: every header it includes that NVRTC compiles (not the
# device-wide algorithms of cub/device/*, host API, nor the host allocator).
CUB_FOR_NVRTC = (
    "cub/config.cuh",
    "cub/block/block_adjacent_difference.cuh", "cub/block/block_discontinuity.cuh", "cub/block/block_exchange.cuh",
    "cub/block/block_histogram.cuh", "cub/block/block_load.cuh", "cub/block/block_merge_sort.cuh",
    "cub/block/block_radix_rank.cuh", "cub/block/block_radix_sort.cuh", "cub/block/block_reduce.cuh",
    "cub/block/block_scan.cuh", "cub/block/block_store.cuh",
    "cub/grid/grid_even_share.cuh", "cub/grid/grid_mapping.cuh", "cub/grid/grid_queue.cuh",
    "cub/thread/thread_load.cuh", "cub/thread/thread_operators.cuh", "cub/thread/thread_reduce.cuh",
    "cub/thread/thread_scan.cuh", "cub/thread/thread_store.cuh",
    "cub/warp/warp_exchange.cuh", "cub/warp/warp_load.cuh", "cub/warp/warp_merge_sort.cuh",
    "cub/warp/warp_reduce.cuh", "cub/warp/warp_scan.cuh", "cub/warp/warp_store.cuh",
    "cub/iterator/arg_index_input_iterator.cuh", "cub/iterator/cache_modified_input_iterator.cuh",
    "cub/iterator/cache_modified_output_iterator.cuh", "cub/iterator/tex_obj_input_iterator.cuh",
    "cub/util_debug.cuh", "cub/util_device.cuh", "cub/util_ptx.cuh", "cub/util_temporary_storage.cuh",
    "cub/util_type.cuh",
)

# ``std::`` names NVRTC gets, as using-declarations (see the module docstring). Not
# ``std::move``/``std::forward``: NVRTC declares those itself (a second declaration through
# ``using`` makes every call ambiguous). ``base`` comes with any of these headers, as
# ``std::size_t`` does with any header of a C++ library.
_STD_NAMES: dict[str, tuple[str, tuple[str, ...]]] = {
    "base": ("::cuda::std::", ("size_t", "ptrdiff_t", "nullptr_t", "max_align_t")),
    "ints": ("::cuda::std::", tuple(
        f"{u}int{k}{w}_t" for k in ("", "_least", "_fast") for u in ("", "u") for w in (8, 16, 32, 64)
    ) + ("intmax_t", "uintmax_t", "intptr_t", "uintptr_t")),
    "limits": ("::cuda::std::", ("numeric_limits",)),
    "utility": ("::cuda::std::", (
        "swap", "exchange", "pair", "make_pair", "declval", "as_const", "move_if_noexcept",
        "integer_sequence", "index_sequence", "make_integer_sequence", "make_index_sequence", "index_sequence_for",
        "in_place", "in_place_t")),
    # (not tuple_size/tuple_element: NVRTC declares those in std for structured bindings)
    "array": ("::cuda::std::", ("array",)),
    "tuple": ("::cuda::std::", ("tuple", "make_tuple", "get", "tie", "apply", "forward_as_tuple", "ignore")),
    "functional": ("::cuda::std::", (
        "plus", "minus", "multiplies", "divides", "modulus", "negate", "equal_to", "not_equal_to", "greater",
        "less", "greater_equal", "less_equal", "logical_and", "logical_or", "logical_not", "bit_and", "bit_or",
        "bit_xor", "invoke", "reference_wrapper", "ref", "cref")),
    "algorithm": ("::cuda::std::", ("min", "max", "clamp", "minmax")),
    "abs": ("::", ("abs", "labs", "llabs")),
    "cstring": ("::", ("memcpy", "memset")),  # (NVRTC's built-ins, which <cstring> puts in std under nvcc)
    "math": ("::", tuple(n for base in (
        "fabs", "fmod", "remainder", "remquo", "fma", "fmax", "fmin", "fdim", "nan", "exp", "exp2", "expm1",
        "log", "log10", "log2", "log1p", "pow", "sqrt", "cbrt", "hypot", "sin", "cos", "tan", "asin", "acos",
        "atan", "atan2", "sinh", "cosh", "tanh", "asinh", "acosh", "atanh", "erf", "erfc", "tgamma", "lgamma",
        "ceil", "floor", "trunc", "round", "lround", "llround", "nearbyint", "rint", "lrint", "llrint", "frexp",
        "ldexp", "modf", "scalbn", "scalbln", "ilogb", "logb", "nextafter", "copysign")
        for n in (base, base + "f")  # (std::fmaxf: NVRTC's built-in ::fmaxf, as libstdc++ has it)
    ) + ("abs", "isfinite", "isinf", "isnan", "signbit")),
    "type_traits": ("::cuda::std::", tuple(
        n for base in (
            "is_void", "is_integral", "is_floating_point", "is_arithmetic", "is_fundamental", "is_scalar",
            "is_object", "is_compound", "is_array", "is_pointer", "is_reference", "is_lvalue_reference",
            "is_rvalue_reference", "is_member_pointer", "is_enum", "is_union", "is_class", "is_function",
            "is_const", "is_volatile", "is_signed", "is_unsigned", "is_trivial", "is_trivially_copyable",
            "is_standard_layout", "is_empty", "is_polymorphic", "is_abstract", "is_final", "is_aggregate",
            "is_same", "is_base_of", "is_convertible", "is_constructible", "is_default_constructible",
            "is_copy_constructible", "is_move_constructible", "is_assignable", "is_copy_assignable",
            "is_move_assignable", "is_destructible", "is_trivially_destructible", "is_nothrow_constructible",
            "is_nothrow_move_constructible", "is_invocable", "alignment_of", "rank", "extent",
            "conjunction", "disjunction", "negation")
        for n in (base, base + "_v")
    ) + tuple(
        n for base in (
            "remove_const", "remove_volatile", "remove_cv", "remove_reference", "remove_pointer", "remove_extent",
            "remove_all_extents", "add_const", "add_pointer", "add_lvalue_reference", "add_rvalue_reference",
            "decay", "make_signed", "make_unsigned", "common_type", "underlying_type", "invoke_result",
            "enable_if", "conditional")
        for n in (base, base + "_t")
    ) + ("integral_constant", "bool_constant", "true_type", "false_type", "void_t", "aligned_storage")),
}

# float.h's macros (gcc's values for IEEE binary32/binary64; libcu++ defines none under NVRTC).
_FLOAT_MACROS = (
    ("FLT_RADIX", "2"),
    ("FLT_MANT_DIG", "24"), ("FLT_DIG", "6"), ("FLT_DECIMAL_DIG", "9"),
    ("FLT_MIN_EXP", "(-125)"), ("FLT_MIN_10_EXP", "(-37)"), ("FLT_MAX_EXP", "128"), ("FLT_MAX_10_EXP", "38"),
    ("FLT_MAX", "3.40282346638528859811704183484516925e+38F"),
    ("FLT_MIN", "1.17549435082228750796873653722224568e-38F"),
    ("FLT_EPSILON", "1.19209289550781250000000000000000000e-7F"),
    ("FLT_TRUE_MIN", "1.40129846432481707092372958328991613e-45F"),
    ("DBL_MANT_DIG", "53"), ("DBL_DIG", "15"), ("DBL_DECIMAL_DIG", "17"),
    ("DBL_MIN_EXP", "(-1021)"), ("DBL_MIN_10_EXP", "(-307)"), ("DBL_MAX_EXP", "1024"), ("DBL_MAX_10_EXP", "308"),
    ("DBL_MAX", "1.79769313486231570814527423731704357e+308"),
    ("DBL_MIN", "2.22507385850720138309023271733240406e-308"),
    ("DBL_EPSILON", "2.22044604925031308084726333618164062e-16"),
    ("DBL_TRUE_MIN", "4.94065645841246544176568792868221372e-324"),
    ("DECIMAL_DIG", "17"),
)
# math.h's: glibc's M_* constants (POSIX), HUGE_VAL(F) (INFINITY and NAN come from libcu++).
_MATH_MACROS = (
    ("M_E", "2.7182818284590452354"), ("M_LOG2E", "1.4426950408889634074"), ("M_LOG10E", "0.43429448190325182765"),
    ("M_LN2", "0.69314718055994530942"), ("M_LN10", "2.30258509299404568402"), ("M_PI", "3.14159265358979323846"),
    ("M_PI_2", "1.57079632679489661923"), ("M_PI_4", "0.78539816339744830962"), ("M_1_PI", "0.31830988618379067154"),
    ("M_2_PI", "0.63661977236758134308"), ("M_2_SQRTPI", "1.12837916709551257390"),
    ("M_SQRT2", "1.41421356237309504880"), ("M_SQRT1_2", "0.70710678118654752440"),
    ("HUGE_VALF", "(::cuda::std::numeric_limits<float>::infinity())"),
    ("HUGE_VAL", "(::cuda::std::numeric_limits<double>::infinity())"),
)
_MACROS = {"float_macros": ("FLT_MAX", _FLOAT_MACROS), "math_macros": ("M_PI", _MATH_MACROS)}

_INCLUDE_RE = re.compile(r'^\s*#\s*include\s*([<"])\s*([^>"]+?)\s*[>"]')


def header_name(line: str) -> str | None:
    """``stdio.h`` for ``#include <stdio.h>`` (or ``"stdio.h"``); None for anything else."""
    m = _INCLUDE_RE.match(line)
    return m.group(2).replace("\\", "/") if m else None


def classify(name: str | None) -> str:
    """``keep``, ``stand_in``, ``nvcc_only``, ``drop`` or ``unknown`` (see the module docstring)."""
    if name is None:
        return "unknown"
    if name == "cub/cub.cuh" or name in _LIBCUXX:
        return "stand_in"
    if name in _KEEP or name.startswith(_KEEP_PREFIXES) or _KEEP_RE.fullmatch(name):
        return "keep"
    if name in _NVCC_ONLY:
        return "nvcc_only"
    if name in _DROP or name.startswith(_DROP_PREFIXES):
        return "drop"
    return "unknown"


def _wrap(prefix: str, items: Sequence[str], suffix: str, width: int = 110) -> list[str]:
    lines, current = [], prefix
    for item in items:
        if len(current) + len(item) + 1 > width and current != prefix:
            lines.append(current.rstrip())
            current = "  "
        current += item + " "
    lines.append(current.rstrip() + suffix)
    return lines


class _Planner:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.std_done: set[str] = set()
        self.macros_done: set[str] = set()

    def rtc_extras(self, extras: Sequence[str]) -> list[str]:
        """Under NVRTC: using-declarations in ``std`` and macros not emitted yet."""
        out: list[str] = []
        decls: list[str] = []
        if "base" not in self.std_done:
            out.append("#include <cuda/std/cstddef>")  # declares namespace cuda::std, size_t...
        for key in ("base", *extras):
            if key in _STD_NAMES and key not in self.std_done:
                self.std_done.add(key)
                prefix, names = _STD_NAMES[key]
                decls += [f"using {prefix}{n};" for n in names]
        if decls:
            decls = list(dict.fromkeys(decls))
            out += _wrap("namespace std { ", decls, " }")
        for key in extras:
            if key in _MACROS and key not in self.macros_done:
                self.macros_done.add(key)
                guard, macros = _MACROS[key]
                out.append(f"#ifndef {guard}")
                out += [f"#define {n} {v}" for n, v in macros]
                out.append("#endif")
        return out

    def block(self, kind: str, group: list[tuple[str, str]]) -> None:
        originals = [line for line, _ in group]
        if kind == "keep":
            self.lines += originals
        elif kind in ("nvcc_only", "unknown"):
            why = ("unknown to hfuse: nvcc only" if kind == "unknown"
                   else "NVRTC: CUtensorMap declared below" if all(n in _DRIVER_HEADERS for _, n in group)
                   else "NVRTC declares printf/memcpy/clock itself")
            self.lines += [f"#ifndef {RTC}  // {why}", *originals, "#endif"]
        else:  # stand_in: other headers under NVRTC, the original for nvcc
            rtc: list[str] = []
            extras: list[str] = []
            for _, name in group:
                if name == "cub/cub.cuh":
                    rtc += [f"#include <{h}>" for h in CUB_FOR_NVRTC]
                else:
                    headers, more = _LIBCUXX[name]
                    rtc += [f"#include <{header}>" for header in headers.split()]
                    extras += more
            rtc = list(dict.fromkeys(rtc))
            if any(name != "cub/cub.cuh" for _, name in group):
                rtc += [line for line in self.rtc_extras(extras) if line not in rtc or not line.startswith("#include")]
            self.lines += [f"#ifdef {RTC}  // NVRTC (hfuse tune): stand-ins for headers it cannot read", *rtc,
                           "#else", *originals, "#endif"]


_IMPLICIT_MATH = re.compile(r"^(M_[A-Z0-9_]+|INFINITY|NAN|HUGE_VALF?)$")
_IMPLICIT_FLOAT = frozenset(name for name, _ in _FLOAT_MACROS)
"""float.h's macros: not implicit under nvcc, but a host header NVRTC leaves out brings them
(mmcv's ``FLT_MIN`` by way of PyTorch's)."""
_IMPLICIT_LIMITS = re.compile(r"^(?:(?:S|U)?CHAR|U?SHRT|U?INT|U?LONG|U?LLONG)_(?:MAX|MIN)$|^CHAR_BIT$")
"""limits.h's macros, which nvcc's implicit ``cuda_runtime.h`` brings along too."""
_IMPLICIT_TYPES = {"uint": "unsigned int", "ushort": "unsigned short", "ulong": "unsigned long", "ssize_t": "long",
                   "u_int8_t": "unsigned char", "u_int16_t": "unsigned short", "u_int32_t": "unsigned int",
                   "u_int64_t": "unsigned long"}
"""glibc's ``<sys/types.h>`` names (x86-64, aarch64), which nvcc's implicit ``cuda_runtime.h`` brings along."""


_STD_USE = re.compile(r"^(?:::)?std::(\w+)")
_REMOVED_BASES = {
    "unary_function": "template <class A, class R> struct unary_function { typedef A argument_type; "
                      "typedef R result_type; };",
    "binary_function": "template <class A1, class A2, class R> struct binary_function { typedef A1 "
                       "first_argument_type; typedef A2 second_argument_type; typedef R result_type; };",
}
"""C++98's function-object bases, gone from the standard since C++17 but kept by libstdc++'s
``<functional>`` (ColossalAI's ``struct CastFunctor : std::unary_function<From, To>``); libcu++
declares them only behind a macro of its own that must precede its first header."""


def _std_groups(uses: frozenset[str]) -> list[str]:
    """The groups of ``_STD_NAMES`` whose ``std::`` names the code mentions (``std::exp``,
    ``std::numeric_limits<float>::max``)."""
    named = {m.group(1) for u in uses if (m := _STD_USE.match(u))}
    return [group for group, (_, names) in _STD_NAMES.items() if group != "base" and named & set(names)]


def _implicit(planner: _Planner, uses: frozenset[str]) -> None:
    """Under NVRTC, what nvcc's implicit ``cuda_runtime.h`` gives device code without an
    ``#include`` (``math.h``'s ``M_PI``, ``INFINITY``; ``limits.h``'s ``INT_MAX``; ``uint``;
    ``int64_t``; ``std::exp``, ``std::max``, ``std::numeric_limits``, ``std::is_same``, by
    way of the host's ``<cmath>``; libstdc++'s ``std::unary_function``), when the code uses it. These also stand in for a host
    header NVRTC leaves out (``torch/extension.h`` brings the fixed-width integers under nvcc,
    and float.h's ``FLT_MIN``).
    GNU's ``__extension__`` (it only silences pedantic warnings) is defined away for NVRTC, and
    its ``__asm__``/``__volatile__`` are defined as ``asm``/``volatile``."""
    rtc: list[str] = []
    if uses & set(_STD_NAMES["ints"][1]) and "ints" not in planner.std_done:
        rtc += ["#include <cuda/std/cstdint>", *planner.rtc_extras(("ints",))]
    if "offsetof" in uses and "base" not in planner.std_done:
        rtc += planner.rtc_extras(())  # (stddef.h's, with cuda/std/cstddef)
    climits = "#include <cuda/std/climits>"
    if any(_IMPLICIT_LIMITS.match(u) for u in uses) and climits not in planner.lines:
        rtc.append(climits)
    for group in _std_groups(uses):
        if group not in planner.std_done:
            headers = next((h for h, extras in _LIBCUXX.values() if group in extras), "")  # (cstring: none)
            rtc += [*(f"#include <{h}>" for h in headers.split()), *planner.rtc_extras((group,))]
    if any(_IMPLICIT_MATH.match(u) for u in uses) and "math_macros" not in planner.macros_done:
        rtc += ["#include <cuda/std/cmath>", *planner.rtc_extras(("math", "math_macros"))]
    if uses & _IMPLICIT_FLOAT and "float_macros" not in planner.macros_done:
        rtc += ["#include <cuda/std/cfloat>", *planner.rtc_extras(("float_macros",))]
    rtc += [f"typedef {t} {name};" for name, t in _IMPLICIT_TYPES.items() if name in uses]
    named = {m.group(1) for u in uses if (m := _STD_USE.match(u))}
    if bases := [text for name, text in _REMOVED_BASES.items() if name in named]:
        rtc.append("namespace std { " + " ".join(bases) + " }")
    if "__extension__" in uses:  # (GNU's "no pedantic warning here", a keyword to nvcc's host compiler)
        rtc.append("#define __extension__")
    # GNU's spellings of asm and volatile (AWQ's ``__asm__ __volatile__("ldmatrix...")``)
    rtc += [f"#define {gnu} {plain}" for gnu, plain in (("__asm__", "asm"), ("__volatile__", "volatile"))
            if gnu in uses]
    if uses & _DRIVER_DEVICE_TYPES:
        rtc.append(_TENSOR_MAP)
    if rtc:
        planner.lines += [f"#ifdef {RTC}  // NVRTC: what nvcc's implicit cuda_runtime.h gives without an #include",
                          *dict.fromkeys(rtc), "#endif"]


def library_device_includes(include_lines: Sequence[str], library_dirs: Sequence[Path],
                            device_files: frozenset[str]) -> frozenset[str]:
    """The include lines of installed libraries' headers (found in ``library_dirs``), and of
    the toolkit's that hfuse does not know (``<thrust/complex.h>``), whose library declares
    what the device code uses (``device_files``, Clang's): kept for NVRTC too, so that
    ``hfuse tune`` compiles the kernels that use them with NVRTC if it can read them, and with
    nvcc where it cannot (``runtime.compile.toolchain_for``), not without them."""
    found = set()
    folders = [*library_dirs, *(Path(d) for d in cuda_include_dirs(import_cupy=False))]
    for line in include_lines:
        name = header_name(line.strip())
        for folder in folders if name is not None and classify(name) == "unknown" else ():
            if (Path(folder) / name).is_file():
                # the library is the header's own folder below the search folder (blocklib/ of
                # <blocklib/block_reduce.cuh>, whatever it includes from there), or the header alone
                top = name.split("/")[0]
                root = os.path.realpath(Path(folder) / top) + (os.sep if "/" in name else "")
                if any(f == root or f.startswith(root) and "/" in name for f in device_files):
                    found.add(line.strip())
                break
    return frozenset(found)


def plan_includes(include_lines: Sequence[str], uses: frozenset[str] = frozenset(),
                  value_macros: Sequence[tuple[str, str]] = (), nvrtc_too: frozenset[str] = frozenset()) -> IncludePlan:
    """The fused file's include lines for the inputs' ``#include`` lines (see the module
    docstring); ``uses``: the names the fused code mentions (for what nvcc gives implicitly).
    ``value_macros``: macros of kept headers the code uses as values (``(name or
    name(params), value)``, the host compiler's): defined under NVRTC, which does not read
    the unknown headers that define them (each only where nothing defined it).
    ``nvrtc_too``: unknown headers whose device code the kernels use
    (``library_device_includes``): kept for both compilers."""
    seen: set[str] = set()
    entries: list[tuple[str, str, str]] = []  # (kind, line, name)
    dropped: list[str] = []
    unknown: list[str] = []
    for raw in include_lines:
        line = raw.strip()
        name = header_name(line)
        key = name if name is not None else line
        if not line or key in seen:
            continue
        seen.add(key)
        kind = classify(name)
        if kind == "drop" and name in _DRIVER_HEADERS and uses & _DRIVER_DEVICE_TYPES:
            kind = "nvcc_only"  # (NVRTC: _implicit declares the tensor map)
        if kind == "drop":
            dropped.append(line)
            if name in _BRING_HALF_TYPES and any(_HALF_NAME.search(u) for u in uses):
                # what device code took of it (__nv_bfloat16 by way of cublas_v2.h), without it
                for brought in ("cuda_fp16.h", "cuda_bf16.h"):
                    if brought not in seen:
                        seen.add(brought)
                        entries.append(("keep", f"#include <{brought}>", brought))
            continue
        if kind == "unknown" and line in nvrtc_too:
            kind = "keep"
        if kind == "unknown":
            unknown.append(line)
        entries.append((kind, line, name or ""))
    if dropped and uses & set(_STD_NAMES["ints"][1]) and not any(n in _INT_HEADERS for _, _, n in entries):
        # uint32_t by way of a dropped header (cuda.h, <iostream>...): nvcc gives it no other way
        entries.append(("stand_in", "#include <cstdint>", "cstdint"))
    planner = _Planner()
    i = 0
    while i < len(entries):
        j = i
        while j < len(entries) and entries[j][0] == entries[i][0]:
            j += 1
        planner.block(entries[i][0], [(line, name) for _, line, name in entries[i:j]])
        i = j
    _implicit(planner, uses)
    if unknown and value_macros:
        planner.lines += ["#ifdef __CUDACC_RTC__  // values of macros of the headers NVRTC does not read"]
        for key, value in value_macros:
            planner.lines += [f"#ifndef {key.split('(')[0]}", f"#define {key} {value}".rstrip(), "#endif"]
        planner.lines.append("#endif")
    return IncludePlan(tuple(planner.lines), tuple(dropped), tuple(unknown))
