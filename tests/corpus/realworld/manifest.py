"""The "real-world" corpus: CUDA files written the way other people write CUDA.

``tests/corpus/*.cu`` holds our own tidy kernels.  The files next to this module imitate
what users actually hand to hfuse: unmodified files of public sample programs,
benchmark suites and libraries (all of them written for this project, none copied).
They bring along what those projects bring along:

* sample programs (``vectorAdd.cu``, ``matrixMul.cu``, ...): ``main()``, C and C++
  standard headers, host functions, ``checkCudaErrors`` from ``common/inc/helper_cuda.h``
  (reached only through ``-Icommon/inc``), ``cudaMemcpyToSymbol``;
* benchmark suites (``*_kernel.cu``): include guards, macros from the command line
  (``-DBLOCK_SIZE=16``, a kernel under ``#ifdef USE_FAST_KERNEL``), ``#define``s with
  trailing comments, index and grid-stride macros, the ``register`` keyword, the same
  ``struct Point3`` in two files, a default argument, headers found through
  ``-Iparboil/common``;
* library code (``mylib_*.cu`` over ``include/mylib/*.cuh``): namespaces, templates,
  block reductions in a header that read ``threadIdx`` and call ``__syncthreads()``,
  a ``SharedMemory<T>`` wrapper, anonymous namespaces, ``using namespace``, a kernel
  and a device helper of the same name in different namespaces;
* ``__constant__`` tables and ``__device__`` globals the host fills, blocks of 120 and
  192 threads and 2-D blocks, cooperative groups under four spellings, CUB warp and
  block collectives, half precision, warp votes and shuffles, early returns before
  barriers (also inside a loop).

Every kernel is deterministic given its inputs (integer math, or float math with one
fixed chain of operations per output, integer atomics only), so a fused run can be
compared bit for bit with an unfused run.

One ``RealKernel`` per kernel (per instantiation, for templates):

``key``
    unique name of the entry.
``file``
    the ``.cu`` file, relative to this folder.
``kernel``
    the name a user selects it by: qualified when it is in a named namespace
    (``"mylib::scale"``); a kernel in an anonymous namespace goes by its plain name.
``block``
    the block the kernel is written for (stated in a comment, a ``#define`` or the host
    code of its file).  Makers honour the ``block`` they are given where the kernel reads
    ``blockDim``; kernels that index with a ``#define`` only work with this block.
``template_args``
    C++ text of the template arguments of a template kernel, e.g. ``("int", "256")``.
``flags``
    the nvcc flags the file needs (``-I`` paths relative to this folder, ``-D``,
    ``-std``); the same for every kernel of a file.  A file compiles with
    ``nvcc -arch=sm_90 -c FILE <flags>`` run in this folder.
``constructs``
    tags of what the kernel or its file exercises; the vocabulary is ``CONSTRUCTS``.
``constant_symbols``
    names of the ``__constant__`` / ``__device__`` globals the kernel reads and the host
    must fill before the launch (all at file scope, unqualified).
``make(rng, cp, block) -> RealLaunch``
    fresh inputs for one launch, exactly like ``corpus.cases``: the argument list (CuPy
    arrays and NumPy scalars in the kernel's parameter order), the grid, the dynamic
    shared memory in bytes, the indices of the arguments the kernel writes, and
    ``symbols``: for each name of ``constant_symbols`` a NumPy array whose bytes the
    caller copies to the start of that symbol (``cudaMemcpyToSymbol`` semantics; with
    CuPy: ``module.get_global(name)`` and a copy from host) before launching.  Called
    twice with generators seeded alike it returns equal inputs.  ``cp`` is CuPy, imported
    only by the caller; makers build everything in NumPy and only call ``cp.asarray``.

Arrays of structs are passed as flat arrays of the member type with the same layout
(``Point3[]`` as float32 triples, ``float4[]`` as float32 quadruples, ``struct Node`` as
int32 pairs, ``__half2[]`` as float16 pairs).  A ``__half`` scalar is a ``np.float16``.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from corpus.cases import Launch
from hfuse.spec import Dim3, KernelSpec

ROOT = Path(__file__).resolve().parent


@dataclass(frozen=True)
class RealLaunch(Launch):
    symbols: dict[str, np.ndarray] = field(default_factory=dict)
    """Host data for the kernel's ``__constant__``/``__device__`` globals, by name."""


@dataclass(frozen=True)
class RealKernel:
    key: str
    file: str
    kernel: str
    block: Dim3
    make: Callable[[np.random.Generator, Any, Dim3], RealLaunch] = field(repr=False)
    template_args: tuple[str, ...] = ()
    flags: tuple[str, ...] = ()
    constructs: tuple[str, ...] = ()
    constant_symbols: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return ROOT / self.file

    @property
    def short_name(self) -> str:
        """The kernel's own name, without namespaces."""
        return self.kernel.rsplit("::", 1)[-1]

    def nvcc_flags(self) -> list[str]:
        """``flags`` with the ``-I`` folders made absolute."""
        out = []
        for f in self.flags:
            out.append(f"-I{(ROOT / f[2:]).resolve()}" if f.startswith("-I") else f)
        return out

    def spec(self, block: Dim3 | None = None) -> KernelSpec:
        return KernelSpec(self.path, self.kernel, block or self.block, self.template_args)


# Tags used in ``constructs``.
CONSTRUCTS: dict[str, str] = {
    # sample programs
    "sample_main": "a real main() beside the kernels",
    "host_code": "host functions (launch wrappers, setup, checks) in the file",
    "helper_header": "#include <helper_cuda.h> from common/inc, reached only through -Icommon/inc",
    "std_headers": "C++ standard headers (<iostream>, <vector>, <chrono>, <algorithm>, ...)",
    "memcpy_to_symbol": "the host fills a symbol with cudaMemcpyToSymbol",
    # benchmark suites
    "include_guard": "#ifndef _X_KERNEL_CU_ / #define / #endif around the file",
    "define_from_cmdline": "a macro the file uses is only defined by -D on the command line",
    "ifdef_kernel": "the kernel exists only under #ifdef (a -D flag)",
    "define_comment": "#define NAME value // comment  or  /* comment */",
    "macro_in_body": "function-like macros (index, min/max, clamp, hash rounds) in the kernel body",
    "grid_stride_macro": "a grid-stride loop spelled as a macro",
    "register_keyword": "'register' variables in device code (built with -std=c++14)",
    "duplicate_struct": "the same struct Point3 defined identically in two files",
    "duplicate_helper": "the same __device__ helper defined identically in two files",
    "default_arg": "a kernel parameter with a default argument (int *partial = NULL)",
    "file_scope_struct": "a struct type at file scope used in the kernel's signature or body",
    "typedef_struct": "typedef struct {...} Name;",
    "local_header": '#include "..." found through a -I folder',
    "no_bounds_check": "no bounds check: the host launches an exact grid",
    "block_uses_define": "the kernel indexes with a #define instead of blockDim: the block is fixed",
    # library code
    "library_header": "#include <mylib/...cuh> through -Iinclude",
    "namespace": "the kernel is in a named namespace",
    "nested_namespace": "namespaces nested two or more deep",
    "anonymous_namespace": "the kernel or a helper is in an anonymous namespace",
    "using_namespace": "using namespace ... at file or namespace scope",
    "same_name_kernel_helper": "a kernel and a __device__ helper share a name in different namespaces",
    "template_kernel": "a template __global__ function",
    "explicit_instantiation": "explicit instantiations of templates in the file",
    "header_helper_sync": "a header helper reads threadIdx/blockDim and calls __syncthreads()",
    "shared_memory_wrapper": "SharedMemory<T> wrapper over extern __shared__ (with a double specialisation)",
    "dynamic_shared": "extern __shared__ memory sized at launch",
    # globals
    "constant_table": "a __constant__ table filled by the host",
    "constant_struct": "a __constant__ array of structs",
    "device_global": "a __device__ global variable the host fills (or resets)",
    # blocks
    "block_120": "120 threads per block (not a multiple of 32)",
    "block_192": "192 threads per block",
    "block_2d": "a 2-D block",
    "block_in_comment": "the intended block is only stated in a comment",
    "block_in_define": "the intended block is a #define",
    # cooperative groups
    "cg_alias": "namespace cg = cooperative_groups;",
    "cg_alias_g": "namespace g = cooperative_groups;",
    "cg_spelled_out": "cooperative_groups:: spelled out in full",
    "cg_using_namespace": "using namespace cooperative_groups;",
    "cg_tile_with_syncthreads": "cg::tiled_partition<32>(cg::this_thread_block()) together with __syncthreads()",
    "cg_sync": "block.sync() / cg::sync(block)",
    "cg_reduce": "cooperative_groups::reduce",
    "cg_small_tile": "tiled_partition<8> or <16>",
    # other device constructs
    "pragma_unroll": "#pragma unroll",
    "restrict": "__restrict__ pointers",
    "ldg": "__ldg loads",
    "half": "cuda_fp16.h, __half / __half2 arithmetic",
    "cub_block": "CUB block collectives (cub::BlockReduce, BlockLoad, BlockScan)",
    "cub_warp": "CUB warp collectives (cub::WarpReduce)",
    "warp_shuffle": "__shfl_*_sync or tile shuffles",
    "warp_vote": "__ballot_sync / __any_sync / __all_sync or tile votes",
    "early_return": "threads return before a __syncthreads() that others still reach",
    "early_return_loop": "a return inside a loop, before the loop's barriers",
    "barrier_in_loop": "__syncthreads() inside a loop",
    "shared_atomics": "atomics on shared memory (integer)",
    "global_atomics": "atomics on global memory (integer)",
    "threadfence": "__threadfence() and a last-block-done ticket",
    "volatile_shared": "volatile pointers to shared or global memory",
    "vector_types": "float2/float3/float4 values",
    "double": "double precision",
    "grid_stride": "a grid-stride loop",
}


# --------------------------------------------------------------------------- helpers
def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


def _i32(v: int) -> np.int32:
    return np.int32(v)


def _u32(v: int) -> np.uint32:
    return np.uint32(v)


def _f32(v: float) -> np.float32:
    return np.float32(v)


def _uniform(rng: np.random.Generator, lo: float, hi: float, n: int | tuple[int, ...]) -> np.ndarray:
    return rng.uniform(lo, hi, n).astype(np.float32)


def _ints(rng: np.random.Generator, lo: int, hi: int, n: int | tuple[int, ...], dtype=np.int32) -> np.ndarray:
    return rng.integers(lo, hi, n, dtype=dtype)


def _launch(cp, args, grid: Dim3, smem: int = 0, outputs: tuple[int, ...] = (), symbols=None) -> RealLaunch:
    dev = [cp.asarray(a) if isinstance(a, np.ndarray) else a for a in args]
    return RealLaunch(dev, grid, smem, tuple(outputs), dict(symbols or {}))


# --------------------------------------------------------------------------- sample programs
def _make_vector_add(rng, cp, block: Dim3) -> RealLaunch:
    n = 50_003
    a, b = _uniform(rng, 0, 1, n), _uniform(rng, 0, 1, n)
    c = _uniform(rng, -9, 9, n)
    return _launch(cp, [a, b, c, _i32(n)], Dim3(_cdiv(n, block.size)), outputs=(2,))


_FILTER_TAPS = 13  # 2 * FILTER_RADIUS + 1 in separableFilter.cu


def _filter_taps(rng) -> np.ndarray:
    taps = rng.uniform(0.1, 1.0, _FILTER_TAPS)
    return (taps / taps.sum()).astype(np.float32)


def _make_filter_rows(rng, cp, block: Dim3) -> RealLaunch:
    w, h = 203, 117  # not multiples of the strip: clamped halos and masked outputs
    src = _uniform(rng, 0, 1, w * h)
    dst = np.full(w * h, -7.0, np.float32)
    taps = _filter_taps(rng)
    grid = Dim3(_cdiv(w, 64), _cdiv(h, 8))  # ROW_STRIP = 64 pixels, ROW_THREADS_Y = 8
    return _launch(cp, [dst, src, _i32(w), _i32(h)], grid, outputs=(0,), symbols={"c_taps": taps})


def _make_filter_columns(rng, cp, block: Dim3) -> RealLaunch:
    w, h = 203, 117
    src = _uniform(rng, 0, 1, w * h)
    dst = np.full(w * h, -7.0, np.float32)
    taps = _filter_taps(rng)
    grid = Dim3(_cdiv(w, 16), _cdiv(h, 16))  # COL_THREADS = 16
    return _launch(cp, [dst, src, _i32(w), _i32(h)], grid, outputs=(0,), symbols={"c_taps": taps})


def _make_matmul(tile: int):
    def make(rng, cp, block: Dim3) -> RealLaunch:
        m, n, k = 100, 75, 53  # not multiples of the tile
        a = _uniform(rng, -1, 1, m * k)
        b = _uniform(rng, -1, 1, k * n)
        c = np.full(m * n, -7.0, np.float32)
        grid = Dim3(_cdiv(n, tile), _cdiv(m, tile))
        return _launch(cp, [c, a, b, _i32(m), _i32(n), _i32(k)], grid, outputs=(0,))

    return make


def _make_block_hist64(rng, cp, block: Dim3) -> RealLaunch:
    count, blocks = 100_003, 32  # HIST_BLOCKS partial histograms
    words = rng.integers(0, 1 << 32, count, dtype=np.uint64).astype(np.uint32)
    partials = np.full(blocks * 64, 7, np.uint32)
    return _launch(cp, [partials, words, _u32(count)], Dim3(blocks), outputs=(0,))


def _make_merge_hist64(rng, cp, block: Dim3) -> RealLaunch:
    rows = 300  # more rows than MERGE_THREADS: the strided loop runs twice for some threads
    partials = _ints(rng, 0, 1 << 20, rows * 64, np.uint32)
    hist = np.full(64, 7, np.uint32)
    return _launch(cp, [hist, partials, _u32(rows)], Dim3(64), outputs=(0,))


def _make_transpose(rng, cp, block: Dim3) -> RealLaunch:
    rows, cols = 100, 75
    src = _uniform(rng, -100, 100, rows * cols)
    dst = np.full(rows * cols, -7.0, np.float32)
    grid = Dim3(_cdiv(cols, 32), _cdiv(rows, 32))  # one 32 x 32 tile per block
    return _launch(cp, [dst, src, _i32(rows), _i32(cols)], grid, outputs=(0,))


def _make_reduce(dtype, per_block: int):
    """reduceInterleaved (per_block=1) or reduceUnrolled (per_block=2) over ``dtype``."""

    def make(rng, cp, block: Dim3) -> RealLaunch:
        n = 50_001
        if dtype == np.int32:
            data = _ints(rng, -100_000, 100_000, n)
        else:
            data = rng.standard_normal(n).astype(dtype)
        blocks = _cdiv(n, per_block * block.size)
        out = np.full(blocks, -7, dtype)
        smem = block.size * np.dtype(dtype).itemsize
        return _launch(cp, [data, out, _u32(n)], Dim3(blocks), smem, outputs=(1,))

    return make


def _make_batched_dot(rng, cp, block: Dim3) -> RealLaunch:
    pairs, length = 100, 1000
    a = _uniform(rng, -1, 1, pairs * length)
    b = _uniform(rng, -1, 1, pairs * length)
    res = np.full(pairs, -7.0, np.float32)
    return _launch(cp, [res, a, b, _i32(pairs), _i32(length)], Dim3(48), outputs=(0,))


def _make_single_pass_sum(rng, cp, block: Dim3) -> RealLaunch:
    n, blocks = 300_001, 40
    data = _uniform(rng, -1, 1, n)
    sums = np.full(blocks, -7.0, np.float32)
    return _launch(cp, [data, sums, _u32(n)], Dim3(blocks), outputs=(1,),
                   symbols={"blocksDone": np.zeros(1, np.uint32)})


# --------------------------------------------------------------------------- benchmark suites
def _make_srad_coeff(rng, cp, block: Dim3) -> RealLaunch:
    rows, cols = 96, 128  # whole tiles of BLOCK_SIZE = 16
    img = _uniform(rng, 0.5, 1.5, rows * cols)
    outs = [np.full(rows * cols, -7.0, np.float32) for _ in range(5)]
    grid = Dim3(cols // 16, rows // 16)
    return _launch(cp, [img, *outs, _i32(rows), _i32(cols), _f32(0.05)], grid, outputs=(1, 2, 3, 4, 5))


def _make_srad_update(rng, cp, block: Dim3) -> RealLaunch:
    rows, cols = 96, 128
    img = _uniform(rng, 0.5, 1.5, rows * cols)
    derivs = [_uniform(rng, -0.1, 0.1, rows * cols) for _ in range(4)]
    coef = _uniform(rng, 0, 1, rows * cols)
    grid = Dim3(cols // 16, rows // 16)
    return _launch(cp, [img, *derivs, coef, _i32(rows), _i32(cols), _f32(0.5)], grid, outputs=(0,))


def _make_thermal(rng, cp, block: Dim3) -> RealLaunch:
    nx, ny, steps = 70, 50, 2
    owned = 16 - 2 * steps  # TILE - 2 * steps * HALO
    power = _uniform(rng, 0, 1, nx * ny)
    t_in = _uniform(rng, 320, 345, nx * ny)
    t_out = np.full(nx * ny, -7.0, np.float32)
    grid = Dim3(_cdiv(nx, owned), _cdiv(ny, owned))
    args = [power, t_in, t_out, _i32(nx), _i32(ny), _i32(steps), _f32(0.01), _f32(0.8), _f32(0.6), _f32(0.05)]
    return _launch(cp, args, grid, outputs=(2,))


def _make_minpath(rng, cp, block: Dim3) -> RealLaunch:
    cols, total_rows, first, nrows = 1000, 12, 2, 5
    owned = 256 - 2 * nrows  # BLOCK_SIZE - 2 * nrows * HALO
    cost = _ints(rng, 0, 10, total_rows * cols)
    prev = _ints(rng, 0, 100, cols)
    nxt = np.full(cols, -7, np.int32)
    args = [cost, prev, nxt, _i32(cols), _i32(first), _i32(nrows)]
    return _launch(cp, args, Dim3(_cdiv(cols, owned)), outputs=(2,))


def _make_nn_distance(rng, cp, block: Dim3) -> RealLaunch:
    n = 20_000
    locs = np.stack([_uniform(rng, -90, 90, n), _uniform(rng, -180, 180, n)], axis=1)
    dist = np.full(n, -7.0, np.float32)
    gx = _cdiv(_cdiv(n, block.size), 2)  # a 2-D grid, as the host builds it for many records
    return _launch(cp, [locs, dist, _i32(n), _f32(30.0), _f32(90.0)], Dim3(gx, 2), outputs=(1,))


def _make_kmeans_swap(rng, cp, block: Dim3) -> RealLaunch:
    npoints, nfeatures = 5000, 6
    src = _uniform(rng, 0, 1, npoints * nfeatures)
    dst = np.full(npoints * nfeatures, -7.0, np.float32)
    return _launch(cp, [src, dst, _i32(npoints), _i32(nfeatures)], Dim3(_cdiv(npoints, block.size)), outputs=(1,))


def _make_kmeans_assign(rng, cp, block: Dim3) -> RealLaunch:
    npoints, nfeatures, nclusters = 10_000, 8, 5
    features = _uniform(rng, 0, 1, npoints * nfeatures)  # feature-major
    centroids = np.zeros(16 * 32, np.float32)  # MAX_CLUSTERS * MAX_FEATURES
    centroids[: nclusters * nfeatures] = _uniform(rng, 0, 1, nclusters * nfeatures)
    membership = _ints(rng, 0, nclusters, npoints)
    blocks = _cdiv(npoints, 256)  # KM_THREADS
    deltas = np.full(blocks, -7, np.int32)
    args = [features, _i32(npoints), _i32(nfeatures), _i32(nclusters), membership, deltas]
    return _launch(cp, args, Dim3(blocks), outputs=(4, 5), symbols={"c_centroids": centroids})


def _make_layer_sums(rng, cp, block: Dim3) -> RealLaunch:
    n_in, n_hidden = 256, 64
    x = _uniform(rng, 0, 1, n_in)
    w = _uniform(rng, -1, 1, n_in * n_hidden)
    partial = np.full((n_in // 16) * n_hidden, -7.0, np.float32)
    grid = Dim3(n_hidden // 16, n_in // 16)
    return _launch(cp, [x, w, partial, _i32(n_in), _i32(n_hidden)], grid, outputs=(2,))


def _make_layer_adjust(rng, cp, block: Dim3) -> RealLaunch:
    n_in, n_hidden = 256, 64
    delta = _uniform(rng, -1, 1, n_hidden)
    layer = _uniform(rng, 0, 1, n_in)
    w = _uniform(rng, -1, 1, n_in * n_hidden)
    oldw = _uniform(rng, -0.1, 0.1, n_in * n_hidden)
    grid = Dim3(n_hidden // 16, n_in // 16)
    return _launch(cp, [delta, layer, w, oldw, _i32(n_in), _i32(n_hidden)], grid, outputs=(2, 3))


def _make_nw_borders(rng, cp, block: Dim3) -> RealLaunch:
    n = 600
    score = _ints(rng, -50, 50, (n + 1) * (n + 1))
    return _launch(cp, [score, _i32(n), _i32(10)], Dim3(_cdiv(n + 1, block.size)), outputs=(0,))


def _make_nw_tile(rng, cp, block: Dim3) -> RealLaunch:
    n = 128  # 8 x 8 tiles of TILE_W = 16
    diag, first = 9, 2  # tiles (2, 7) .. (7, 2)
    sim = _ints(rng, -4, 6, n * n)
    score = _ints(rng, -200, 200, (n + 1) * (n + 1))
    args = [sim, score, _i32(n), _i32(diag), _i32(first), _i32(10)]
    return _launch(cp, args, Dim3(6), outputs=(1,))


def _make_lj_force(rng, cp, block: Dim3) -> RealLaunch:
    inum, neigh = 3000, 48
    pos = np.zeros((inum, 4), np.float32)
    pos[:, :3] = _uniform(rng, 0, 10, (inum, 3))
    # neighbour j of atom i, column-major; never the atom itself
    offs = rng.integers(1, inum, (neigh, inum))
    nlist = ((np.arange(inum)[None, :] + offs) % inum).astype(np.int32).ravel()
    force = np.full((inum, 4), -7.0, np.float32)
    args = [force, pos, _i32(neigh), nlist, _f32(16.0), _f32(1.5), _f32(2.0), _i32(inum)]
    return _launch(cp, args, Dim3(_cdiv(inum, block.size)), outputs=(0,))


def _make_triad(rng, cp, block: Dim3) -> RealLaunch:
    n = block.size * 317  # no bounds check: an exact grid
    a, b = _uniform(rng, -1, 1, n), _uniform(rng, -1, 1, n)
    c = np.full(n, -7.0, np.float32)
    return _launch(cp, [a, b, c, _f32(1.75)], Dim3(n // block.size), outputs=(2,))


def _make_sgemm(rng, cp, block: Dim3) -> RealLaunch:
    m, n, k = 128, 96, 40  # multiples of TILE_M = 64, TILE_N = 32, TILE_K = 8
    a = _uniform(rng, -1, 1, m * k)  # row-major, lda = k
    b = _uniform(rng, -1, 1, k * n)  # row-major, ldb = n
    c = _uniform(rng, -1, 1, m * n)  # row-major, ldc = n
    args = [a, _i32(k), b, _i32(n), c, _i32(n), _i32(k), _f32(1.25), _f32(0.5)]
    return _launch(cp, args, Dim3(n // 32, m // 64), outputs=(4,))


def _make_spmv_jds(rng, cp, block: Dim3) -> RealLaunch:
    dim, ncols = 3000, 2000
    nnz = rng.integers(0, 41, dim)
    perm = np.argsort(-nnz, kind="stable").astype(np.int32)  # sorted row -> original row
    snnz = nnz[perm]
    ndiags = int(snnz[0])
    data = np.zeros(max(ndiags, 1) * dim, np.float32)
    index = np.zeros(max(ndiags, 1) * dim, np.int32)
    for k in range(ndiags):
        rows = np.nonzero(snnz > k)[0]
        data[k * dim + rows] = _uniform(rng, -1, 1, len(rows))
        index[k * dim + rows] = _ints(rng, 0, ncols, len(rows))
    offsets = np.zeros(4096, np.int32)  # MAX_DIAGS
    offsets[:ndiags] = np.arange(ndiags, dtype=np.int32) * dim
    nwarps = _cdiv(dim, 32)
    depth = np.zeros(8192, np.int32)  # MAX_WARPS
    depth[:nwarps] = snnz[::32][:nwarps]  # rows are sorted: a warp's first row is its longest
    x = _uniform(rng, -1, 1, ncols)
    y = np.full(dim, -7.0, np.float32)
    args = [data, index, perm, x, y, _i32(dim)]
    return _launch(cp, args, Dim3(_cdiv(dim, block.size)), outputs=(4,),
                   symbols={"c_jd_offset": offsets, "c_warp_depth": depth})


def _make_stencil(rows_per_block: int):
    def make(rng, cp, block: Dim3) -> RealLaunch:
        nx, ny, nz = 70, 45, 12
        a0 = _uniform(rng, -1, 1, nx * ny * nz)
        anext = np.full(nx * ny * nz, -7.0, np.float32)
        grid = Dim3(_cdiv(nx, 32), _cdiv(ny, rows_per_block))
        args = [_f32(0.125), _f32(0.1), a0, anext, _i32(nx), _i32(ny), _i32(nz)]
        return _launch(cp, args, grid, outputs=(3,))

    return make


def _make_phi_mag(rng, cp, block: Dim3) -> RealLaunch:
    num_k = 3001
    re, im = _uniform(rng, -1, 1, num_k), _uniform(rng, -1, 1, num_k)
    mag = np.full(num_k, -7.0, np.float32)
    return _launch(cp, [re, im, mag, _i32(num_k)], Dim3(_cdiv(num_k, 512)), outputs=(2,))


def _make_compute_q(rng, cp, block: Dim3) -> RealLaunch:
    num_x = 256 * 24  # Q_THREADS: no bounds check
    chunk = 701  # not a multiple of the unroll factor
    ktraj = np.zeros((1024, 4), np.float32)  # K_CHUNK x {kx, ky, kz, phiMag}
    ktraj[:chunk, :3] = _uniform(rng, -0.5, 0.5, (chunk, 3))
    ktraj[:chunk, 3] = _uniform(rng, 0, 1, chunk)
    x, y, z = (_uniform(rng, -1, 1, num_x) for _ in range(3))
    qr, qi = _uniform(rng, -1, 1, num_x), _uniform(rng, -1, 1, num_x)
    args = [_i32(chunk), x, y, z, qr, qi]
    return _launch(cp, args, Dim3(num_x // 256), outputs=(4, 5), symbols={"c_k": ktraj})


def _gauss_system(rng, n: int) -> np.ndarray:
    a = _uniform(rng, -1, 1, (n, n))
    a[np.arange(n), np.arange(n)] += np.float32(n)  # diagonally dominant
    return a.ravel()


def _make_gauss_pivot_column(rng, cp, block: Dim3) -> RealLaunch:
    n, p = 1100, 7
    a = _gauss_system(rng, n)
    mult = np.full(n * n, -7.0, np.float32)
    return _launch(cp, [mult, a, _i32(n), _i32(p)], Dim3(_cdiv(n - p - 1, block.size)), outputs=(0,))


def _make_gauss_update(rng, cp, block: Dim3) -> RealLaunch:
    n, p = 200, 5
    mult = _uniform(rng, -0.1, 0.1, n * n)
    a = _gauss_system(rng, n)
    b = _uniform(rng, -1, 1, n)
    grid = Dim3(_cdiv(n - p, 16), _cdiv(n - p - 1, 16))  # BLOCK_SIZE_XY; x runs along the rows
    return _launch(cp, [mult, a, b, _i32(n), _i32(p)], grid, outputs=(1, 2))


def _bfs_graph(rng, n: int):
    deg = rng.integers(1, 7, n)
    first = np.concatenate([[0], np.cumsum(deg)[:-1]])
    edges = rng.integers(0, n, int(deg.sum()), dtype=np.int32)
    nodes = np.stack([first, deg], axis=1).astype(np.int32)  # struct Node {first, count}
    level = np.full(n, -1, np.int64)
    level[0] = 0
    todo = deque([0])
    while todo:
        v = todo.popleft()
        for u in edges[first[v]: first[v] + deg[v]]:
            if level[u] < 0:
                level[u] = level[v] + 1
                todo.append(u)
    return nodes, edges, level


def _make_bfs_kernel(rng, cp, block: Dim3) -> RealLaunch:
    n = 6000
    nodes, edges, level = _bfs_graph(rng, n)
    lvl = min(3, int(level.max()))
    # a consistent state after `lvl` levels: every frontier node has level `lvl`
    frontier = level == lvl
    visited = (level >= 0) & (level <= lvl)
    cost = np.where(visited, level, -1).astype(np.int32)
    nxt = np.zeros(n, np.bool_)
    args = [nodes, edges, frontier, nxt, visited, cost, _i32(n)]
    return _launch(cp, args, Dim3(_cdiv(n, 512)), outputs=(2, 3, 5))


def _make_bfs_kernel2(rng, cp, block: Dim3) -> RealLaunch:
    n = 6000
    frontier = rng.random(n) < 0.1
    nxt = rng.random(n) < 0.2
    visited = rng.random(n) < 0.5
    more = np.zeros(1, np.bool_)
    return _launch(cp, [frontier, nxt, visited, more, _i32(n)], Dim3(_cdiv(n, 512)), outputs=(0, 1, 2, 3))


_EULER_CELLS = 192 * 40  # padded to the block size EULER_BLOCK


def _euler_state(rng) -> np.ndarray:
    n = _EULER_CELLS
    rho = _uniform(rng, 1, 2, n)
    mom = _uniform(rng, -0.3, 0.3, 3 * n)
    energy = _uniform(rng, 2.5, 3.5, n)  # keeps the pressure positive
    return np.concatenate([rho, mom, energy])


def _make_init_state(rng, cp, block: Dim3) -> RealLaunch:
    state = np.full(5 * _EULER_CELLS, -7.0, np.float32)
    free = np.array([1.4, 0.3, 0.0, 0.05, 2.9], np.float32)
    return _launch(cp, [_i32(_EULER_CELLS), state], Dim3(_EULER_CELLS // 192), outputs=(1,),
                   symbols={"c_freestream": free})


def _make_local_time_step(rng, cp, block: Dim3) -> RealLaunch:
    state = _euler_state(rng)
    areas = _uniform(rng, 0.5, 2, _EULER_CELLS)
    dt = np.full(_EULER_CELLS, -7.0, np.float32)
    return _launch(cp, [_i32(_EULER_CELLS), state, areas, dt], Dim3(_EULER_CELLS // 192), outputs=(3,))


def _make_rk_stage(rng, cp, block: Dim3) -> RealLaunch:
    old = _euler_state(rng)
    state = np.full(5 * _EULER_CELLS, -7.0, np.float32)
    dt = _uniform(rng, 0.001, 0.01, _EULER_CELLS)
    residual = _uniform(rng, -1, 1, 5 * _EULER_CELLS)
    args = [_i32(1), _i32(_EULER_CELLS), old, state, dt, residual]
    return _launch(cp, args, Dim3(_EULER_CELLS // 192), outputs=(3,))


def _make_scan_blocks(rng, cp, block: Dim3) -> RealLaunch:
    n = 20_000
    blocks = _cdiv(n, 2 * block.size)
    data = _ints(rng, -1000, 1000, n)
    out = np.full(n, -7, np.int32)
    partial = np.full(blocks, -7, np.int32)
    return _launch(cp, [data, out, _i32(n), partial], Dim3(blocks), 2 * block.size * 4, outputs=(1, 3))


def _make_add_partials(rng, cp, block: Dim3) -> RealLaunch:
    n = 20_000
    blocks = _cdiv(n, 256)  # SCAN_ELEMS per block
    out = _ints(rng, -1000, 1000, n)
    partials = _ints(rng, -100_000, 100_000, blocks)
    return _launch(cp, [out, partials, _i32(n)], Dim3(blocks), outputs=(0,))


def _make_transform_points(rng, cp, block: Dim3) -> RealLaunch:
    n = 10_001
    pts = _uniform(rng, -5, 5, 3 * n)  # Point3[n]
    out = np.full(3 * n, -7.0, np.float32)
    theta = rng.uniform(0, 2 * np.pi)
    c, s = np.cos(theta), np.sin(theta)
    rigid = np.array([c, -s, 0, 0.5, s, c, 0, -1.25, 0, 0, 1, 2.0], np.float32)
    return _launch(cp, [pts, out, _i32(n)], Dim3(_cdiv(n, block.size)), outputs=(1,),
                   symbols={"c_rigid": rigid})


def _make_residuals(rng, cp, block: Dim3) -> RealLaunch:
    n, m = 10_001, 4000
    moved = _uniform(rng, -5, 5, 3 * n)
    target = _uniform(rng, -5, 5, 3 * m)
    match = _ints(rng, 0, m, n)
    err = np.full(n, -7.0, np.float32)
    return _launch(cp, [moved, target, match, err, _i32(n)], Dim3(_cdiv(n, block.size)), outputs=(3,))


def _make_label_points(rng, cp, block: Dim3) -> RealLaunch:
    n, k = 9000, 12
    pts = _uniform(rng, -5, 5, 3 * n)
    cents = _uniform(rng, -5, 5, 3 * k)
    label = np.full(n, -7, np.int32)
    dist = np.full(n, -7.0, np.float32)
    args = [pts, _i32(n), cents, _i32(k), label, dist]
    return _launch(cp, args, Dim3(_cdiv(n, block.size)), outputs=(4, 5))


def _make_count_labels(rng, cp, block: Dim3) -> RealLaunch:
    n, k = 20_000, 40
    labels = _ints(rng, 0, k, n)
    counts = _ints(rng, 0, 5, k)  # accumulated into
    return _launch(cp, [labels, _i32(n), counts, _i32(k)], Dim3(30), outputs=(2,))


def _make_leaky_relu(rng, cp, block: Dim3) -> RealLaunch:
    n = 100_000
    x = rng.standard_normal(n).astype(np.float32)
    y = np.full(n, -7.0, np.float32)
    return _launch(cp, [_i32(n), x, y, _f32(0.01)], Dim3(50), outputs=(2,))  # grid-stride


def _make_max_pool(rng, cp, block: Dim3) -> RealLaunch:
    num, ch, h, w, k, s, pad = 2, 8, 33, 33, 3, 2, 1
    ph = pw = (h + 2 * pad - k) // s + 1
    count = num * ch * ph * pw
    bottom = rng.standard_normal(num * ch * h * w).astype(np.float32)
    top = np.full(count, -7.0, np.float32)
    argmax = np.full(count, -7, np.int32)
    args = [_i32(count), bottom, _i32(ch), _i32(h), _i32(w), _i32(ph), _i32(pw), _i32(k), _i32(k),
            _i32(s), _i32(s), _i32(pad), _i32(pad), top, argmax]
    return _launch(cp, args, Dim3(6), outputs=(13, 14))  # fewer blocks than elements: grid-stride


# --------------------------------------------------------------------------- library code
def _make_mylib_scale(rng, cp, block: Dim3) -> RealLaunch:
    n = 77_777
    x = rng.standard_normal(n).astype(np.float32)
    return _launch(cp, [x, _f32(-1.5), _i32(n)], Dim3(64), outputs=(0,))


def _make_mylib_axpby(rng, cp, block: Dim3) -> RealLaunch:
    n = 77_777
    x, y = rng.standard_normal(n).astype(np.float32), rng.standard_normal(n).astype(np.float32)
    z = np.full(n, -7.0, np.float32)
    args = [x, y, z, _f32(0.75), _f32(-2.0), _f32(-1.0), _f32(1.0), _i32(n)]
    return _launch(cp, args, Dim3(_cdiv(n, block.size * 4)), outputs=(2,))


def _make_mylib_reduce(dtype):
    def make(rng, cp, block: Dim3) -> RealLaunch:
        n, blocks = 123_457, 64
        data = _ints(rng, -10_000, 10_000, n) if dtype == np.int32 else rng.standard_normal(n).astype(dtype)
        sums = np.full(blocks, -7, dtype)
        return _launch(cp, [data, sums, _i32(n)], Dim3(blocks), outputs=(1,))

    return make


def _make_row_max_sum(rng, cp, block: Dim3) -> RealLaunch:
    rows, cols = 300, 1000
    m = _ints(rng, -100_000, 100_000, rows * cols)
    mx, sm = np.full(rows, -7, np.int32), np.full(rows, -7, np.int32)
    return _launch(cp, [m, mx, sm, _i32(cols)], Dim3(rows), outputs=(1, 2))


def _make_row_sumsq(dtype):
    def make(rng, cp, block: Dim3) -> RealLaunch:
        rows, cols = 200, 777
        a = rng.standard_normal(rows * cols).astype(dtype)
        out = np.full(rows, -7, dtype)
        smem = block.size * np.dtype(dtype).itemsize
        return _launch(cp, [a, out, _i32(cols)], Dim3(rows), smem, outputs=(1,))

    return make


def _make_softmax(rng, cp, block: Dim3) -> RealLaunch:
    rows, cols = 150, 500
    x = (3 * rng.standard_normal(rows * cols)).astype(np.float32)
    y = np.full(rows * cols, -7.0, np.float32)
    return _launch(cp, [x, y, _i32(cols)], Dim3(rows), outputs=(1,))


def _make_fill_pattern(rng, cp, block: Dim3) -> RealLaunch:
    n = 50_000
    out = np.full(n, 7, np.uint32)
    seed = np.uint32(rng.integers(0, 1 << 32, dtype=np.uint64))
    return _launch(cp, [out, seed, _i32(n)], Dim3(_cdiv(n, block.size)), outputs=(0,))


def _make_xor_checksum(rng, cp, block: Dim3) -> RealLaunch:
    n, blocks = 100_000, 40
    words = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    sums = np.full(blocks, 7, np.uint32)
    return _launch(cp, [words, sums, _i32(n)], Dim3(blocks), outputs=(1,))


# --------------------------------------------------------------------------- CUB, CG, warp, half
def _make_block_sum_cub(rng, cp, block: Dim3) -> RealLaunch:
    tiles = 100
    data = _ints(rng, -100_000, 100_000, tiles * 128 * 4)  # whole tiles: no bounds check
    out = np.full(tiles, -7, np.int32)
    return _launch(cp, [data, out], Dim3(tiles), outputs=(1,))


def _make_block_max_cub(rng, cp, block: Dim3) -> RealLaunch:
    n = 30_000
    data = _ints(rng, -1 << 30, 1 << 30, n)
    blocks = _cdiv(n, 192)
    out = np.full(blocks, -7, np.int32)
    return _launch(cp, [data, out, _i32(n)], Dim3(blocks), outputs=(1,))


def _make_compact_cub(rng, cp, block: Dim3) -> RealLaunch:
    n = 40_000
    blocks = _cdiv(n, 256)
    data = _ints(rng, -1000, 1000, n)
    out = np.full(blocks * 256, -7, np.int32)
    counts = np.full(blocks, -7, np.int32)
    return _launch(cp, [data, out, counts, _i32(n), _i32(250)], Dim3(blocks), outputs=(1, 2))


def _make_warp_row_sums(rng, cp, block: Dim3) -> RealLaunch:
    rows, cols = 1001, 300  # the last block has warps without a row
    m = _ints(rng, -1000, 1000, rows * cols)
    out = np.full(rows, -7, np.int32)
    return _launch(cp, [m, out, _i32(rows), _i32(cols)], Dim3(_cdiv(rows, 4)), outputs=(1,))


def _make_segment_sums16(rng, cp, block: Dim3) -> RealLaunch:
    n = 64_005
    x = rng.standard_normal(n).astype(np.float32)
    out = np.full(_cdiv(n, 16), -7.0, np.float32)
    return _launch(cp, [x, out, _i32(n)], Dim3(_cdiv(n, 256)), outputs=(1,))


def _make_tile_stats(rng, cp, block: Dim3) -> RealLaunch:
    n = 30_001
    blocks = _cdiv(n, block.size)
    data = _ints(rng, -100_000, 100_000, n)
    s, m = np.full(blocks, -7, np.int32), np.full(blocks, -7, np.int32)
    return _launch(cp, [data, s, m, _i32(n)], Dim3(blocks), outputs=(1, 2))


def _make_segment_min8(rng, cp, block: Dim3) -> RealLaunch:
    n = 30_001
    blocks = _cdiv(n, block.size)
    data = rng.integers(0, 1 << 32, n, dtype=np.uint64).astype(np.uint32)
    seg = np.full(_cdiv(n, 8), 7, np.uint32)
    bmin = np.full(blocks, 7, np.uint32)
    return _launch(cp, [data, seg, bmin, _u32(n)], Dim3(blocks), outputs=(1, 2))


def _make_block_sum_count(rng, cp, block: Dim3) -> RealLaunch:
    n = 30_001
    blocks = _cdiv(n, 256)  # CG_THREADS
    data = _ints(rng, -1000, 1000, n)
    sums, above = np.full(blocks, -7, np.int32), np.full(blocks, -7, np.int32)
    return _launch(cp, [data, _i32(100), sums, above, _i32(n)], Dim3(blocks), outputs=(2, 3))


def _make_row_segment_scan(rng, cp, block: Dim3) -> RealLaunch:
    w, h = 200, 77
    gx, gy = _cdiv(w, 16), _cdiv(h, 16)
    img = _ints(rng, -100, 100, w * h)
    scan = np.full(w * h, -7, np.int32)
    totals = np.full(h * gx, -7, np.int32)
    odd = np.full(h * gx, 7, np.uint32)
    return _launch(cp, [img, scan, totals, odd, _i32(w), _i32(h)], Dim3(gx, gy), outputs=(1, 2, 3))


def _make_haxpy(rng, cp, block: Dim3) -> RealLaunch:
    n2 = 40_000
    x = rng.standard_normal(2 * n2).astype(np.float16)  # __half2[n2]
    y = rng.standard_normal(2 * n2).astype(np.float16)
    return _launch(cp, [_i32(n2), np.float16(0.75), x, y], Dim3(80), outputs=(3,))


def _make_hdot(rng, cp, block: Dim3) -> RealLaunch:
    n, blocks = 100_001, 50
    a = rng.standard_normal(n).astype(np.float16)
    b = rng.standard_normal(n).astype(np.float16)
    partial = np.full(blocks, -7.0, np.float32)
    return _launch(cp, [a, b, partial, _i32(n)], Dim3(blocks), outputs=(2,))


def _make_pack_half2(rng, cp, block: Dim3) -> RealLaunch:
    n2 = 30_001
    src = (100 * rng.standard_normal(2 * n2)).astype(np.float32)  # float2[n2]
    dst = np.zeros(2 * n2, np.float16)
    return _launch(cp, [src, dst, _i32(n2)], Dim3(_cdiv(n2, block.size)), outputs=(1,))


def _make_warp_compact(rng, cp, block: Dim3) -> RealLaunch:
    n = 30_000
    blocks = _cdiv(n, block.size)
    warps = blocks * block.size // 32
    data = _ints(rng, -1000, 1000, n)
    out = np.full(warps * 32, -7, np.int32)
    counts = np.full(warps, -7, np.int32)
    return _launch(cp, [data, out, counts, _i32(n)], Dim3(blocks), outputs=(1, 2))


def _make_warp_scan(rng, cp, block: Dim3) -> RealLaunch:
    n = 30_017
    warps = _cdiv(n, 32)
    blocks = _cdiv(warps, block.y)
    data = _ints(rng, -1000, 1000, n)
    data[:64] &= ~1  # two warps of even values only (allEven flag)
    data[64:96] = np.abs(data[64:96])  # a warp without negatives (anyNegative flag clear)
    out = np.full(n, -7, np.int32)
    totals = np.full(blocks * block.y, -7, np.int32)
    flags = np.full(blocks * block.y, -7, np.int32)
    return _launch(cp, [data, out, totals, flags, _i32(n)], Dim3(blocks), outputs=(1, 2, 3))


def _make_pair_difference(rng, cp, block: Dim3) -> RealLaunch:
    n = 20_001  # odd and not a multiple of the block: the last block returns early
    data = _ints(rng, -100_000, 100_000, n)
    out = np.full(n, -7, np.int32)
    return _launch(cp, [data, out, _i32(n)], Dim3(_cdiv(n, block.size)), outputs=(1,))


def _make_window_max(rng, cp, block: Dim3) -> RealLaunch:
    n, tiles_per_block = 20_000, 3
    data = _ints(rng, -100_000, 100_000, n)
    out = np.full(n, -7, np.int32)
    # 157 tiles need 53 blocks; 60 blocks: block 52 stops inside its loop, 53.. at once
    return _launch(cp, [data, out, _i32(n), _i32(tiles_per_block)], Dim3(60), outputs=(1,))


# --------------------------------------------------------------------------- hashes and checksums
def _icbrt(n: int) -> int:
    x = 1 << ((n.bit_length() + 2) // 3)
    while True:
        y = (2 * x + n // (x * x)) // 3
        if y >= x:
            break
        x = y
    while x ** 3 > n:
        x -= 1
    while (x + 1) ** 3 <= n:
        x += 1
    return x


def _primes(count: int) -> list[int]:
    out: list[int] = []
    c = 2
    while len(out) < count:
        if all(c % p for p in out):
            out.append(c)
        c += 1
    return out


def _sha256_constants() -> tuple[np.ndarray, np.ndarray]:
    """The round constants (cube roots of the first 64 primes) and the initial hash
    (square roots of the first 8), from their definition, with exact integer roots."""
    import math

    p = _primes(64)
    k = np.array([_icbrt(q << 96) & 0xFFFFFFFF for q in p], np.uint32)
    h0 = np.array([math.isqrt(q << 64) & 0xFFFFFFFF for q in p[:8]], np.uint32)
    return k, h0


def _make_sha256(rng, cp, block: Dim3) -> RealLaunch:
    count = 5000
    msgs = rng.integers(0, 1 << 32, 8 * count, dtype=np.uint64).astype(np.uint32)
    digests = np.full(8 * count, 7, np.uint32)
    k, h0 = _sha256_constants()
    return _launch(cp, [msgs, digests, _i32(count)], Dim3(_cdiv(count, block.size)), outputs=(1,),
                   symbols={"dev_k": k, "dev_h0": h0})


def _make_count_below_target(rng, cp, block: Dim3) -> RealLaunch:
    count = 5000
    digests = rng.integers(0, 1 << 32, 8 * count, dtype=np.uint64).astype(np.uint32)
    digests[0::8][rng.integers(0, count, 300)] >>= 9  # some digests start with >= 9 zero bits
    digests[0::8][rng.integers(0, count, 20)] = 0  # and some with a zero first word
    hits = np.array([3], np.int32)  # accumulated into
    return _launch(cp, [digests, _i32(count), _i32(9), hits], Dim3(_cdiv(count, block.size)), outputs=(3,))


def _crc_table() -> np.ndarray:
    table = np.zeros(256, np.uint32)
    for n in range(256):
        c = n
        for _ in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if c & 1 else (c >> 1)
        table[n] = c
    return table


def _make_records(with_table: bool):
    def make(rng, cp, block: Dim3) -> RealLaunch:
        rec_len, records = 61, 3000
        data = rng.integers(0, 256, rec_len * records, dtype=np.uint8)
        out = np.full(records, 7, np.uint32)
        symbols = {"d_crc_table": _crc_table()} if with_table else {}
        args = [data, _u32(rec_len), _u32(records), out]
        return _launch(cp, args, Dim3(_cdiv(records, block.size)), outputs=(3,), symbols=symbols)

    return make


# --------------------------------------------------------------------------- the corpus
_HELPER = ("-Icommon/inc",)
_PARBOIL = ("-Iparboil/common",)
_MYLIB = ("-Iinclude",)
_SAMPLE = ("sample_main", "host_code", "helper_header")

_K = RealKernel

ENTRIES: tuple[RealKernel, ...] = tuple(
    [
        # ---- sample programs
        _K("vector_add", "vectorAdd.cu", "vectorAdd", Dim3(256), _make_vector_add, flags=_HELPER,
           constructs=_SAMPLE + ("block_in_comment",)),
        _K("filter_rows", "separableFilter.cu", "filterRows", Dim3(32, 8), _make_filter_rows, flags=_HELPER,
           constructs=_SAMPLE + ("std_headers", "constant_table", "memcpy_to_symbol", "block_2d", "block_in_define",
                                 "block_uses_define", "pragma_unroll"),
           constant_symbols=("c_taps",)),
        _K("filter_columns", "separableFilter.cu", "filterColumns", Dim3(16, 16), _make_filter_columns, flags=_HELPER,
           constructs=_SAMPLE + ("std_headers", "constant_table", "memcpy_to_symbol", "block_2d", "block_in_define",
                                 "block_uses_define", "pragma_unroll"),
           constant_symbols=("c_taps",)),
        _K("matmul_tiled_16", "matrixMul.cu", "matMulTiled", Dim3(16, 16), _make_matmul(16), ("16",), _HELPER,
           constructs=_SAMPLE + ("std_headers", "template_kernel", "block_2d", "pragma_unroll", "barrier_in_loop")),
        _K("matmul_tiled_8", "matrixMul.cu", "matMulTiled", Dim3(8, 8), _make_matmul(8), ("8",), _HELPER,
           constructs=_SAMPLE + ("std_headers", "template_kernel", "block_2d", "pragma_unroll", "barrier_in_loop")),
        _K("block_hist64", "histogram64.cu", "blockHist64", Dim3(192), _make_block_hist64, flags=_HELPER,
           constructs=_SAMPLE + ("block_192", "block_in_define", "shared_atomics", "grid_stride")),
        _K("merge_hist64", "histogram64.cu", "mergeHist64", Dim3(256), _make_merge_hist64, flags=_HELPER,
           constructs=_SAMPLE + ("block_in_define", "block_uses_define", "barrier_in_loop")),
        _K("transpose_naive", "transpose.cu", "copyTransposeNaive", Dim3(32, 8), _make_transpose, flags=_HELPER,
           constructs=_SAMPLE + ("std_headers", "block_2d", "block_in_define", "block_uses_define")),
        _K("transpose_tiled", "transpose.cu", "copyTransposeTiled", Dim3(32, 8), _make_transpose, flags=_HELPER,
           constructs=_SAMPLE + ("std_headers", "block_2d", "block_in_define", "block_uses_define")),
        _K("reduce_interleaved_f", "reduction_kernel.cu", "reduceInterleaved", Dim3(256), _make_reduce(np.float32, 1),
           ("float",),
           constructs=("include_guard", "host_code", "template_kernel", "explicit_instantiation", "shared_memory_wrapper",
                       "dynamic_shared", "cg_alias", "cg_sync", "barrier_in_loop")),
        _K("reduce_unrolled_i256", "reduction_kernel.cu", "reduceUnrolled", Dim3(256), _make_reduce(np.int32, 2),
           ("int", "256"),
           constructs=("include_guard", "host_code", "template_kernel", "shared_memory_wrapper", "dynamic_shared",
                       "cg_alias", "cg_sync", "warp_shuffle", "barrier_in_loop")),
        _K("reduce_unrolled_d128", "reduction_kernel.cu", "reduceUnrolled", Dim3(128), _make_reduce(np.float64, 2),
           ("double", "128"),
           constructs=("include_guard", "host_code", "template_kernel", "shared_memory_wrapper", "dynamic_shared",
                       "cg_alias", "cg_sync", "warp_shuffle", "double")),
        _K("batched_dot", "dotProducts.cu", "batchedDot", Dim3(120), _make_batched_dot, flags=_HELPER,
           constructs=_SAMPLE + ("std_headers", "block_120", "block_in_define", "block_uses_define", "barrier_in_loop")),
        _K("single_pass_sum", "singlePassSum.cu", "singlePassSum", Dim3(256), _make_single_pass_sum, flags=_HELPER,
           constructs=_SAMPLE + ("device_global", "memcpy_to_symbol", "threadfence", "global_atomics",
                                 "volatile_shared", "block_in_define", "block_uses_define", "early_return"),
           constant_symbols=("blocksDone",)),
        # ---- benchmark suites
        _K("srad_coeff", "srad_kernel.cu", "srad_coeff", Dim3(16, 16), _make_srad_coeff, flags=("-DBLOCK_SIZE=16",),
           constructs=("include_guard", "define_from_cmdline", "block_2d", "macro_in_body", "block_uses_define")),
        _K("srad_update", "srad_kernel.cu", "srad_update", Dim3(16, 16), _make_srad_update, flags=("-DBLOCK_SIZE=16",),
           constructs=("include_guard", "define_from_cmdline", "block_2d", "macro_in_body", "block_uses_define")),
        _K("thermal_steps", "thermal_kernel.cu", "thermal_steps", Dim3(16, 16), _make_thermal,
           constructs=("include_guard", "define_comment", "macro_in_body", "block_2d", "block_in_define",
                       "barrier_in_loop", "block_uses_define")),
        _K("minpath_rows", "minpath_kernel.cu", "minpath_rows", Dim3(256), _make_minpath, flags=("-DBLOCK_SIZE=256",),
           constructs=("include_guard", "define_from_cmdline", "define_comment", "macro_in_body", "barrier_in_loop",
                       "block_uses_define")),
        _K("nn_distance", "nearest_neighbor.cu", "distanceToQuery", Dim3(256), _make_nn_distance,
           constructs=("sample_main", "host_code", "std_headers", "typedef_struct", "block_in_define")),
        _K("kmeans_swap", "kmeans_kernel.cu", "kmeans_swap", Dim3(256), _make_kmeans_swap, flags=("-std=c++14",),
           constructs=("include_guard", "register_keyword", "host_code")),
        _K("kmeans_assign", "kmeans_kernel.cu", "kmeans_assign", Dim3(256), _make_kmeans_assign, flags=("-std=c++14",),
           constructs=("include_guard", "register_keyword", "constant_table", "memcpy_to_symbol", "define_comment",
                       "block_in_define", "barrier_in_loop", "host_code"),
           constant_symbols=("c_centroids",)),
        _K("layer_partial_sums", "layer_forward_kernel.cu", "layer_partial_sums", Dim3(16, 16), _make_layer_sums,
           constructs=("include_guard", "define_comment", "block_2d", "block_in_define", "block_uses_define",
                       "barrier_in_loop")),
        _K("layer_adjust_weights", "layer_forward_kernel.cu", "layer_adjust_weights", Dim3(16, 16),
           _make_layer_adjust,
           constructs=("include_guard", "define_comment", "block_2d", "block_in_define", "block_uses_define")),
        _K("nw_init_borders", "seqalign_kernel.cu", "nw_init_borders", Dim3(256), _make_nw_borders,
           constructs=("include_guard", "block_in_comment")),
        _K("nw_tile_diagonal", "seqalign_kernel.cu", "nw_tile_diagonal", Dim3(16), _make_nw_tile,
           constructs=("include_guard", "define_comment", "block_in_define", "block_uses_define", "barrier_in_loop")),
        _K("lj_forces", "md_kernel.cu", "lj_forces", Dim3(128), _make_lj_force, ("float", "float4"),
           constructs=("template_kernel", "explicit_instantiation", "restrict", "ldg", "pragma_unroll", "vector_types",
                       "block_in_define", "host_code")),
        _K("triad", "triad.cu", "triad", Dim3(128), _make_triad,
           constructs=("sample_main", "host_code", "std_headers", "no_bounds_check", "block_in_comment",
                       "macro_in_body")),
        _K("sgemm_nn", "sgemm_kernel.cu", "sgemm_nn_regblock", Dim3(16, 8), _make_sgemm, flags=_PARBOIL,
           constructs=("local_header", "host_code", "block_2d", "block_in_define", "define_comment", "pragma_unroll",
                       "block_uses_define", "barrier_in_loop", "no_bounds_check")),
        _K("spmv_jds", "spmv_jds.cu", "spmv_jds_kernel", Dim3(192), _make_spmv_jds, flags=_PARBOIL,
           constructs=("local_header", "host_code", "constant_table", "memcpy_to_symbol", "block_192",
                       "block_in_comment", "restrict"),
           constant_symbols=("c_jd_offset", "c_warp_depth")),
        _K("stencil_naive", "stencil7_kernel.cu", "stencil_naive", Dim3(32, 4), _make_stencil(4), flags=_PARBOIL,
           constructs=("local_header", "macro_in_body", "block_2d", "block_in_comment")),
        _K("stencil_shared", "stencil7_kernel.cu", "stencil_shared", Dim3(32, 8), _make_stencil(8), flags=_PARBOIL,
           constructs=("local_header", "macro_in_body", "block_2d", "block_in_define", "block_uses_define",
                       "barrier_in_loop")),
        _K("phi_magnitude", "mri_q_kernel.cu", "phi_magnitude", Dim3(512), _make_phi_mag, flags=_PARBOIL,
           constructs=("local_header", "block_in_define", "block_uses_define")),
        _K("compute_q", "mri_q_kernel.cu", "compute_q", Dim3(256), _make_compute_q, flags=_PARBOIL,
           constructs=("local_header", "host_code", "constant_table", "constant_struct", "file_scope_struct",
                       "memcpy_to_symbol", "block_in_define", "block_uses_define", "no_bounds_check",
                       "pragma_unroll"),
           constant_symbols=("c_k",)),
        _K("gauss_pivot_column", "gauss_elim_kernel.cu", "gauss_pivot_column", Dim3(512), _make_gauss_pivot_column,
           flags=("-DUSE_FAST_KERNEL",), constructs=("include_guard", "define_comment", "block_in_define")),
        _K("gauss_update", "gauss_elim_kernel.cu", "gauss_update", Dim3(16, 16), _make_gauss_update,
           flags=("-DUSE_FAST_KERNEL",), constructs=("include_guard", "define_comment", "block_2d", "block_in_define")),
        _K("gauss_update_tiled", "gauss_elim_kernel.cu", "gauss_update_tiled", Dim3(16, 16),
           _make_gauss_update, flags=("-DUSE_FAST_KERNEL",),
           constructs=("include_guard", "ifdef_kernel", "define_comment", "block_2d", "block_in_define",
                       "block_uses_define", "restrict", "ldg")),
        _K("bfs_expand", "bfs_kernel.cu", "Kernel", Dim3(512), _make_bfs_kernel,
           constructs=("include_guard", "file_scope_struct", "block_in_define", "block_uses_define")),
        _K("bfs_advance", "bfs_kernel.cu", "Kernel2", Dim3(512), _make_bfs_kernel2,
           constructs=("include_guard", "block_in_define", "block_uses_define")),
        _K("euler_init_state", "euler_flux_kernel.cu", "init_state", Dim3(192), _make_init_state,
           flags=("-std=c++14",),
           constructs=("include_guard", "register_keyword", "constant_table", "memcpy_to_symbol", "block_192",
                       "block_in_define", "block_uses_define", "define_comment", "no_bounds_check", "host_code"),
           constant_symbols=("c_freestream",)),
        _K("euler_local_time_step", "euler_flux_kernel.cu", "local_time_step", Dim3(192), _make_local_time_step,
           flags=("-std=c++14",),
           constructs=("include_guard", "register_keyword", "block_192", "block_in_define", "block_uses_define",
                       "vector_types", "no_bounds_check")),
        _K("euler_rk_stage", "euler_flux_kernel.cu", "rk_stage", Dim3(192), _make_rk_stage, flags=("-std=c++14",),
           constructs=("include_guard", "register_keyword", "block_192", "block_in_define", "block_uses_define",
                       "pragma_unroll", "no_bounds_check")),
        _K("scan_blocks", "scan_kernel.cu", "scan_blocks", Dim3(128), _make_scan_blocks,
           constructs=("include_guard", "default_arg", "dynamic_shared", "host_code", "block_in_define",
                       "barrier_in_loop")),
        _K("scan_add_partials", "scan_kernel.cu", "add_partials", Dim3(128), _make_add_partials,
           constructs=("include_guard", "host_code", "block_in_define", "block_uses_define")),
        _K("transform_points", "point_transform_kernel.cu", "transform_points", Dim3(256), _make_transform_points,
           constructs=("duplicate_struct", "duplicate_helper", "file_scope_struct", "constant_table",
                       "memcpy_to_symbol", "restrict", "host_code", "block_in_comment"),
           constant_symbols=("c_rigid",)),
        _K("icp_residuals", "point_transform_kernel.cu", "residuals", Dim3(256), _make_residuals,
           constructs=("duplicate_struct", "duplicate_helper", "file_scope_struct", "block_in_comment")),
        _K("label_points", "nearest_centroid_kernel.cu", "label_points", Dim3(128), _make_label_points,
           constructs=("duplicate_struct", "duplicate_helper", "file_scope_struct", "block_in_comment")),
        _K("count_labels", "nearest_centroid_kernel.cu", "count_labels", Dim3(128), _make_count_labels,
           constructs=("duplicate_struct", "shared_atomics", "global_atomics", "grid_stride", "block_in_comment")),
        _K("leaky_relu", "nn_layers_kernel.cu", "nnops::LeakyReluForward", Dim3(512), _make_leaky_relu, ("float",),
           constructs=("grid_stride_macro", "macro_in_body", "namespace", "template_kernel", "explicit_instantiation",
                       "host_code", "std_headers")),
        _K("max_pool", "nn_layers_kernel.cu", "nnops::MaxPool2dForwardNCHW", Dim3(512), _make_max_pool, ("float",),
           constructs=("grid_stride_macro", "macro_in_body", "namespace", "template_kernel", "host_code")),
        # ---- library code
        _K("mylib_scale", "mylib_elementwise.cu", "mylib::scale", Dim3(256), _make_mylib_scale, flags=_MYLIB,
           constructs=("library_header", "namespace", "same_name_kernel_helper", "restrict", "grid_stride",
                       "host_code")),
        _K("mylib_axpby", "mylib_elementwise.cu", "mylib::axpby_clamped", Dim3(128), _make_mylib_axpby, flags=_MYLIB,
           constructs=("library_header", "namespace", "restrict", "grid_stride", "block_in_comment")),
        _K("mylib_reduce_i256", "mylib_reduce.cu", "mylib::reduce_sum", Dim3(256), _make_mylib_reduce(np.int32),
           ("int", "256"), _MYLIB,
           constructs=("library_header", "namespace", "template_kernel", "explicit_instantiation",
                       "header_helper_sync", "warp_shuffle", "restrict")),
        _K("mylib_reduce_f192", "mylib_reduce.cu", "mylib::reduce_sum", Dim3(192), _make_mylib_reduce(np.float32),
           ("float", "192"), _MYLIB,
           constructs=("library_header", "namespace", "template_kernel", "explicit_instantiation",
                       "header_helper_sync", "block_192", "warp_shuffle")),
        _K("row_max_sum", "mylib_reduce.cu", "row_max_sum", Dim3(128), _make_row_max_sum, flags=_MYLIB,
           constructs=("library_header", "using_namespace", "header_helper_sync", "warp_shuffle",
                       "block_in_comment")),
        _K("row_sumsq_d", "mylib_norms.cu", "row_sumsq", Dim3(128), _make_row_sumsq(np.float64), ("double",), _MYLIB,
           constructs=("library_header", "shared_memory_wrapper", "dynamic_shared", "anonymous_namespace",
                       "using_namespace", "template_kernel", "double", "host_code", "explicit_instantiation")),
        _K("row_sumsq_f", "mylib_norms.cu", "row_sumsq", Dim3(128), _make_row_sumsq(np.float32), ("float",), _MYLIB,
           constructs=("library_header", "shared_memory_wrapper", "dynamic_shared", "anonymous_namespace",
                       "using_namespace", "template_kernel")),
        _K("softmax_rows", "mylib_softmax.cu", "mylib::nn::softmax_rows", Dim3(128), _make_softmax, flags=_MYLIB,
           constructs=("library_header", "namespace", "nested_namespace", "header_helper_sync", "warp_shuffle",
                       "host_code")),
        _K("fill_pattern", "mylib_tools.cu", "fill_pattern", Dim3(256), _make_fill_pattern, flags=_MYLIB,
           constructs=("library_header", "anonymous_namespace", "grid_stride", "host_code", "block_in_comment")),
        _K("xor_checksum", "mylib_tools.cu", "tools::xor_checksum", Dim3(256), _make_xor_checksum, flags=_MYLIB,
           constructs=("library_header", "namespace", "using_namespace", "anonymous_namespace",
                       "header_helper_sync", "block_in_comment")),
        # ---- CUB
        _K("cub_tile_sums", "cub_block_reduce.cu", "tileSums", Dim3(128), _make_block_sum_cub, ("128", "4"),
           constructs=("cub_block", "template_kernel", "no_bounds_check", "host_code")),
        _K("cub_block_max192", "cub_block_reduce.cu", "blockMax192", Dim3(192), _make_block_max_cub,
           constructs=("cub_block", "block_192", "block_in_define", "block_uses_define")),
        _K("cub_compact", "cub_block_scan.cu", "compactAboveThreshold", Dim3(256), _make_compact_cub,
           constructs=("cub_block", "restrict", "block_in_define", "block_uses_define")),
        _K("cub_warp_row_sums", "cub_warp_reduce.cu", "warpRowSums", Dim3(128), _make_warp_row_sums,
           constructs=("cub_warp", "block_in_comment", "block_in_define")),
        _K("cub_segment_sums16", "cub_warp_reduce.cu", "segmentSums16", Dim3(256), _make_segment_sums16,
           constructs=("cub_warp", "block_in_comment")),
        # ---- cooperative groups
        _K("cg_tile_stats", "cg_tile_stats.cu", "tileStats", Dim3(192), _make_tile_stats,
           constructs=("cg_alias", "cg_tile_with_syncthreads", "warp_shuffle", "block_192", "block_in_define")),
        _K("cg_segment_min8", "cg_segment_min.cu", "segmentMin8", Dim3(120), _make_segment_min8,
           constructs=("cg_alias_g", "cg_sync", "cg_small_tile", "warp_shuffle", "block_120", "block_in_define")),
        _K("cg_block_sum_count", "cg_spelled_out.cu", "blockSumAndCount", Dim3(256), _make_block_sum_count,
           constructs=("cg_spelled_out", "cg_reduce", "cg_sync", "block_in_define", "block_uses_define")),
        _K("cg_row_segment_scan", "cg_row_scan.cu", "rowSegmentScan", Dim3(16, 16), _make_row_segment_scan,
           constructs=("cg_using_namespace", "cg_sync", "cg_small_tile", "warp_shuffle", "warp_vote", "block_2d",
                       "block_in_comment", "block_uses_define")),
        # ---- half precision, warp intrinsics, early exits
        _K("haxpy", "half_precision.cu", "haxpy", Dim3(256), _make_haxpy,
           constructs=("half", "restrict", "ldg", "grid_stride")),
        _K("hdot_partial", "half_precision.cu", "hdot_partial", Dim3(128), _make_hdot,
           constructs=("half", "restrict", "pragma_unroll", "block_in_define", "block_uses_define",
                       "barrier_in_loop")),
        _K("pack_half2", "half_precision.cu", "pack_half2", Dim3(256), _make_pack_half2,
           constructs=("half", "restrict", "vector_types")),
        _K("warp_compact", "warp_intrinsics.cu", "warpCompact", Dim3(192), _make_warp_compact,
           constructs=("warp_vote", "block_192", "block_in_comment", "macro_in_body")),
        _K("warp_inclusive_scan", "warp_intrinsics.cu", "warpInclusiveScan", Dim3(32, 8), _make_warp_scan,
           constructs=("warp_shuffle", "warp_vote", "block_2d", "block_in_comment", "pragma_unroll")),
        _K("pair_difference", "early_exit.cu", "pairDifference", Dim3(256), _make_pair_difference,
           constructs=("early_return", "block_in_define")),
        _K("window_max", "early_exit.cu", "windowMax", Dim3(128), _make_window_max,
           constructs=("early_return_loop", "barrier_in_loop", "block_in_define")),
        _K("sha256_32byte", "sha256_kernel.cu", "sha256_32byte", Dim3(128), _make_sha256,
           constructs=("constant_table", "memcpy_to_symbol", "macro_in_body", "pragma_unroll", "restrict",
                       "host_code", "block_in_define"),
           constant_symbols=("dev_k", "dev_h0")),
        _K("sha256_count_below", "sha256_kernel.cu", "count_below_target", Dim3(128), _make_count_below_target,
           constructs=("global_atomics", "host_code", "block_in_define")),
        _K("crc32_records", "crc32_kernel.cu", "crc32_records", Dim3(120), _make_records(True),
           constructs=("device_global", "memcpy_to_symbol", "block_120", "block_in_define", "define_comment",
                       "host_code"),
           constant_symbols=("d_crc_table",)),
        _K("adler32_records", "crc32_kernel.cu", "adler32_records", Dim3(120), _make_records(False),
           constructs=("block_120", "block_in_define", "host_code")),
    ]
)

KERNELS: dict[str, RealKernel] = {k.key: k for k in ENTRIES}

FILES: tuple[str, ...] = tuple(sorted({k.file for k in KERNELS.values()}))


def kernels_of(file: str) -> list[RealKernel]:
    return [k for k in KERNELS.values() if k.file == file]


def flags_of(file: str) -> tuple[str, ...]:
    """The nvcc flags ``file`` needs: those of its kernels (the same for all of them)."""
    out: list[str] = []
    for k in kernels_of(file):
        for f in k.flags:
            if f not in out:
                out.append(f)
    return tuple(out)
