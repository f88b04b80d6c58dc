"""The example corpus: each kernel of ``tests/corpus/*.cu``, how to launch it, and the
fusions the compiler's tests run over it.

Every kernel is deterministic: integer math, or float math with one operation chain
per output element, and only integer atomics. So an unfused and a fused run on the
same inputs must give bit-identical outputs.

``make(rng, cp, block)`` builds fresh inputs for one launch with ``block`` threads and
returns a ``Launch``: the argument list (CuPy arrays and NumPy scalars, in the kernel's
parameter order), the grid, the dynamic shared memory in bytes and the indices of the
arguments the kernel writes. Called twice with generators seeded alike it returns
equal inputs and equal initial outputs. CuPy is only imported by the caller.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from hfuse.spec import Dim3, KernelSpec

CORPUS = Path(__file__).resolve().parent
ERRORS = CORPUS / "errors"
MAX_FUSED_THREADS = 1024


@dataclass(frozen=True)
class Launch:
    args: list[Any]
    grid: Dim3
    smem: int
    outputs: tuple[int, ...]


def _cdiv(a: int, b: int) -> int:
    return -(-a // b)


@dataclass(frozen=True)
class Case:
    key: str
    """Unique name of this entry (a kernel, or one instantiation of a template)."""
    file: str
    kernel: str
    block: Dim3
    make: Callable[[np.random.Generator, Any, Dim3], Launch] = field(repr=False)
    alt_blocks: tuple[Dim3, ...] = ()
    """Other blocks the kernel runs correctly with (tunable kernels); two of them."""
    template_args: tuple[str, ...] = ()
    block_sensitive: bool = False
    """Whether its outputs depend on the block shape (per-block results)."""
    constructs: tuple[str, ...] = ()

    @property
    def path(self) -> Path:
        return CORPUS / self.file

    @property
    def tunable(self) -> bool:
        return bool(self.alt_blocks)

    def spec(self, block: Dim3 | None = None) -> KernelSpec:
        return KernelSpec(self.path, self.kernel, block or self.block, self.template_args, tunable=self.tunable)


# --------------------------------------------------------------------------- makers
def _i32(v: int) -> np.int32:
    return np.int32(v)


def _make_vec_scale(rng, cp, block: Dim3) -> Launch:
    n = 100_003
    x = cp.asarray(rng.standard_normal(n, dtype=np.float32))
    y = cp.asarray(rng.standard_normal(n, dtype=np.float32))  # overwritten; starts non-zero
    return Launch([x, y, np.float32(1.75), np.float32(-0.5), _i32(n)], Dim3(96), 0, (1,))


def _make_vec_offset(rng, cp, block: Dim3) -> Launch:
    n = 50_000
    x = cp.asarray(rng.integers(-1 << 20, 1 << 20, n, dtype=np.int32))
    y = cp.asarray(rng.integers(-9, 9, n, dtype=np.int32))
    return Launch([x, y, _i32(12345), _i32(n)], Dim3(40), 0, (1,))


def _make_block_reduce(rng, cp, block: Dim3) -> Launch:
    n = 40_000
    blocks = _cdiv(n, block.size)
    data = cp.asarray(rng.integers(-100_000, 100_000, n, dtype=np.int32))
    sums = cp.asarray(rng.integers(0, 5, blocks, dtype=np.int32))
    maxima = cp.asarray(rng.integers(0, 5, blocks, dtype=np.int32))
    return Launch([data, sums, maxima, _i32(n)], Dim3(blocks), 0, (1, 2))


def _make_stencil2d(rng, cp, block: Dim3) -> Launch:
    w, h = 203, 117  # not multiples of 16: the early return is taken
    img = cp.asarray(rng.integers(-1000, 1000, w * h, dtype=np.int32))
    out = cp.asarray(np.full(w * h, -7, dtype=np.int32))
    return Launch([img, out, _i32(w), _i32(h)], Dim3(_cdiv(w, block.x), _cdiv(h, block.y)), 0, (1,))


def _make_box3d(rng, cp, block: Dim3) -> Launch:
    nx, ny, nz = 37, 29, 13
    vol = cp.asarray(rng.integers(-1000, 1000, nx * ny * nz, dtype=np.int32))
    out = cp.asarray(np.full(nx * ny * nz, -7, dtype=np.int32))
    grid = Dim3(_cdiv(nx, block.x), _cdiv(ny, block.y), _cdiv(nz, block.z))
    return Launch([vol, out, _i32(nx), _i32(ny), _i32(nz)], grid, 0, (1,))


def _make_histogram_dyn(rng, cp, block: Dim3) -> Launch:
    n, nbins = 200_000, 3000
    data = cp.asarray(rng.integers(0, 1 << 31, n, dtype=np.uint32))
    bins = cp.asarray(rng.integers(0, 3, nbins, dtype=np.uint32))  # accumulated into
    return Launch([data, _i32(n), bins, _i32(nbins)], Dim3(120), nbins * 4, (2,))


def _make_scan_dyn(rng, cp, block: Dim3) -> Launch:
    n = 30_001
    data = cp.asarray(rng.integers(-1000, 1000, n, dtype=np.int32))
    out = cp.asarray(np.full(n, -7, dtype=np.int32))
    return Launch([data, out, _i32(n)], Dim3(_cdiv(n, block.size)), 2 * block.size * 4, (1,))


def _make_cg_reduce(rng, cp, block: Dim3) -> Launch:
    n = 50_000
    blocks = _cdiv(n, block.size)
    data = cp.asarray(rng.integers(0, 1 << 30, n, dtype=np.int32))
    out = cp.asarray(np.full(blocks + n, -7, dtype=np.int32))
    return Launch([data, out, _i32(n)], Dim3(blocks), 0, (1,))


def _make_warp_shuffle(rng, cp, block: Dim3) -> Launch:
    n = 64_000 + 17
    rows = _cdiv(n, 32)
    data = cp.asarray(rng.integers(-1 << 24, 1 << 24, n, dtype=np.int32))
    sums = cp.asarray(np.full(rows, -7, dtype=np.int32))
    xors = cp.asarray(np.full(rows, -7, dtype=np.int32))
    return Launch([data, sums, xors, _i32(n)], Dim3(_cdiv(rows, block.y)), 0, (1, 2))


def _make_axpy(dtype, unroll: int):
    def make(rng, cp, block: Dim3) -> Launch:
        n = 100_000 + 5
        if dtype == np.int32:
            x = rng.integers(-1000, 1000, n, dtype=np.int32)
            y = rng.integers(-1000, 1000, n, dtype=np.int32)
            a = np.int32(-3)
        else:
            x = rng.standard_normal(n, dtype=np.float32)
            y = rng.standard_normal(n, dtype=np.float32)
            a = np.float32(0.625)
        grid = Dim3(_cdiv(n, block.size * unroll))
        return Launch([cp.asarray(x), cp.asarray(y), a, _i32(n)], grid, 0, (1,))

    return make


def _make_vote_count(rng, cp, block: Dim3) -> Launch:
    n = 33_000
    blocks = _cdiv(n, block.size)
    data = rng.integers(1, 1000, n, dtype=np.int32)
    data[rng.integers(0, n, 40)] = -5  # some blocks see a negative value
    data[rng.integers(0, n, 40)] = 0  # some blocks are not all positive
    stats = cp.asarray(np.full(4 * blocks, -7, dtype=np.int32))
    return Launch([cp.asarray(data), stats, _i32(n), _i32(500)], Dim3(blocks), 0, (1,))


# --------------------------------------------------------------------------- the corpus
_ALT_1D = (Dim3(128), Dim3(384))

CASES: dict[str, Case] = {
    c.key: c
    for c in [
        Case("vec_scale", "vec_scale.cu", "vec_scale", Dim3(256), _make_vec_scale, _ALT_1D,
             constructs=("1-D", "grid-stride", "macro in body", "float")),
        Case("vec_offset", "vec_scale.cu", "vec_offset", Dim3(128), _make_vec_offset, (Dim3(64), Dim3(256)),
             constructs=("1-D", "macro in body", "second kernel of a file")),
        Case("block_reduce", "block_reduce.cu", "block_reduce", Dim3(256), _make_block_reduce, _ALT_1D,
             block_sensitive=True,
             constructs=("static shared", "helper reads threadIdx/blockDim", "helper calls __syncthreads", "barrier in loop")),
        Case("stencil2d", "stencil2d.cu", "stencil2d", Dim3(16, 16), _make_stencil2d,
             constructs=("2-D block", "2-D grid", "early return before barrier", "static shared", "shared helper")),
        Case("box3d", "box3d.cu", "box3d", Dim3(8, 8, 4), _make_box3d, (Dim3(8, 8, 2), Dim3(8, 8, 6)),
             block_sensitive=True,
             constructs=("3-D block", "3-D grid", "early return without barrier", "shared helper")),
        Case("histogram_dyn", "histogram_dyn.cu", "histogram_dyn", Dim3(256), _make_histogram_dyn, _ALT_1D,
             constructs=("dynamic shared", "shared atomics", "barriers", "grid-stride")),
        Case("scan_dyn", "scan_dyn.cu", "scan_dyn", Dim3(256), _make_scan_dyn, _ALT_1D, block_sensitive=True,
             constructs=("file-scope dynamic shared", "barrier in loop")),
        Case("cg_reduce", "cg_reduce.cu", "cg_reduce", Dim3(256), _make_cg_reduce, _ALT_1D, block_sensitive=True,
             constructs=("cooperative groups", "block.sync", "cg::sync", "this_thread_block().sync", "tiled_partition<32>", "tile.shfl_down")),
        Case("warp_shuffle", "warp_shuffle.cu", "warp_shuffle", Dim3(32, 8), _make_warp_shuffle, (Dim3(32, 4), Dim3(32, 12)),
             constructs=("2-D block", "__shfl_xor_sync", "__shfl_sync", "__syncwarp", "helper reads threadIdx")),
        Case("axpy_t", "axpy_template.cu", "axpy_t", Dim3(256), _make_axpy(np.int32, 4), _ALT_1D, ("int", "4"),
             constructs=("template kernel", "#pragma unroll")),
        Case("axpy_t_f", "axpy_template.cu", "axpy_t", Dim3(128), _make_axpy(np.float32, 2), (Dim3(64), Dim3(256)), ("float", "2"),
             constructs=("template kernel", "float")),
        Case("vote_count", "vote_count.cu", "vote_count", Dim3(256), _make_vote_count, _ALT_1D, block_sensitive=True,
             constructs=("__syncthreads_count", "__syncthreads_and", "__syncthreads_or")),
    ]
}

BLOCK_SENSITIVE = frozenset(k for k, c in CASES.items() if c.block_sensitive)

# Fusions the tests run: pairs, one group of three and one of four. The first kernel of
# a group takes the first threads of the fused block.
GROUPS: tuple[tuple[str, ...], ...] = (
    ("vec_scale", "block_reduce"),  # macro + static shared and barrier helpers
    ("stencil2d", "histogram_dyn"),  # 2-D grid with early return + dynamic shared
    ("histogram_dyn", "scan_dyn"),  # both barriers AND dynamic shared memory
    ("box3d", "cg_reduce"),  # 3-D block and grid + cooperative groups
    ("warp_shuffle", "vote_count"),  # 2-D warp rows + barrier reductions
    ("axpy_t", "stencil2d"),  # template + 2-D
    ("cg_reduce", "vote_count"),  # two kinds of barriers
    ("box3d", "scan_dyn"),  # 3-D grid against a 1-D grid of another size
    ("vec_offset", "vec_scale"),  # two kernels of one file
    ("block_reduce", "warp_shuffle"),
    ("axpy_t", "axpy_t_f"),  # one template kernel, two instantiations
    ("block_reduce", "stencil2d"),  # static shared and barriers in both
    ("histogram_dyn", "vec_offset"),
    ("axpy_t_f", "box3d"),
    ("stencil2d", "box3d"),  # 2-D grid against a 3-D grid; clamp_index() defined in both files
    ("stencil2d", "histogram_dyn", "axpy_t"),  # three kernels
    ("box3d", "scan_dyn", "warp_shuffle", "vote_count"),  # four kernels, 1024 threads
)


def group_id(group: Sequence[str]) -> str:
    return "+".join(group)


@dataclass(frozen=True)
class FusionConfig:
    """One way to fuse a group: the parts' blocks, the layout (its spec) and the register cap."""

    group: tuple[str, ...]
    blocks: tuple[Dim3, ...]
    layout: str
    cap: Any
    number: int = 0

    @property
    def id(self) -> str:
        blocks = ",".join(str(b) for b in self.blocks)
        layout = {"horizontal": "h", "vertical": "v"}.get(self.layout, self.layout)
        return f"{group_id(self.group)}[{blocks}]-{layout}-{self.cap.label if self.cap else 'nocap'}"


def partitions(group: Sequence[str], limit: int = 3) -> list[tuple[Dim3, ...]]:
    """Up to ``limit`` distinct block assignments for ``group`` (defaults first) that fit
    in one fused block: the tunable kernels take their alternative blocks."""
    cases = [CASES[k] for k in group]

    def pick(choice: Callable[[int, Case], Dim3]) -> tuple[Dim3, ...]:
        return tuple(choice(j, c) if c.tunable else c.block for j, c in enumerate(cases))

    candidates = [
        pick(lambda j, c: c.block),
        pick(lambda j, c: c.alt_blocks[0]),
        pick(lambda j, c: c.alt_blocks[1]),
        pick(lambda j, c: c.alt_blocks[j % 2]),
        pick(lambda j, c: c.alt_blocks[(j + 1) % 2]),
        pick(lambda j, c: c.alt_blocks[0] if j % 2 else c.block),
        pick(lambda j, c: c.alt_blocks[1] if j % 2 else c.block),
    ]
    found: list[tuple[Dim3, ...]] = []
    for blocks in candidates:
        if blocks not in found and sum(b.size for b in blocks) <= MAX_FUSED_THREADS:
            found.append(blocks)
    return found[:limit]


def specs(group: Sequence[str], blocks: Sequence[Dim3] | None = None) -> list[KernelSpec]:
    blocks = blocks or [CASES[k].block for k in group]
    return [CASES[k].spec(b) for k, b in zip(group, blocks)]
