"""Workloads of the four crypto kernels: SHA256d, BLAKE-256, BLAKE2b and Ethash.

Every kernel has the same leading parameters (see ``bench/kernels/*.cu``)::

    0 const unsigned int* header         20 words (80 bytes); Ethash: 8 words (32 bytes)
    1 unsigned long long  start_nonce
    2 unsigned long long  num_nonces     = size
    3 unsigned long long  target         a nonce hits when its value <= target
    4 unsigned long long* hashes         every value (small=True), else a null pointer
    5 unsigned int*       found_count    hits, all of them counted
    6 unsigned long long* found_nonces   the first max_found hits, in no order
    7 unsigned int        max_found
    8 const uint4*        dag            Ethash only: num_pages pages of 128 bytes
    9 unsigned int        num_pages      Ethash only

The value of a nonce is the first 8 bytes of its hash read big-endian
(``hfuse.bench.reference.crypto`` computes it on the CPU). The null ``hashes`` pointer of
a benchmark launch is passed as ``np.uint64(0)`` (8 bytes, like a pointer).

The kernels keep their block of 128 threads (``tunable=False``); a grid-stride loop
covers the nonces, so the grid is free (``grid_free=True``): the default grid is
``BLOCKS_PER_SM`` blocks per SM, at most one thread per nonce.

``size`` is the number of nonces hashed by one launch. ``found_count`` and
``found_nonces`` accumulate: a runtime that launches a ``KernelLaunch`` more than once
must reset its outputs (zero / the ``FOUND_SENTINEL``) before each checked run.
"""
from __future__ import annotations

import math
from pathlib import Path

import numpy as np

from ...launch import KernelLaunch, Output
from ...spec import Dim3, KernelSpec
from .base import Workload

BLOCK = 128
"""The crypto kernels' block size (the paper keeps it)."""

BLOCKS_PER_SM = 16
"""Default grid: this many 128-thread blocks per SM (2112 blocks on a 132-SM H100)."""

DEFAULT_SIZES: dict[str, int] = {
    # Calibrated for about 2 ms alone (H200, 2026-11-22); on an H100 they run 1.95-2.02 ms
    # (bench/results/h100/kernels.json).
    "sha256": 13_000_000,    # ~6.5 Gnonce/s (midstate: 2 compressions per nonce)
    "blake256": 27_500_000,  # ~14 Gnonce/s
    "blake2b": 19_000_000,   # ~9.5 Gnonce/s
    "ethash": 409_600,       # ~200 Mhash/s: 8 KiB of random 128-byte DAG reads per hash
}
"""Nonces per launch at the representative size (easy to change after calibration)."""

SWEEP_POINTS = 8
"""The sweep: this many sizes, geometric from DEFAULT/4 to DEFAULT*4."""

TEST_SIZES: dict[str, tuple[int, int]] = {
    "sha256": (1000, 40000),
    "blake256": (1000, 40000),
    "blake2b": (1000, 40000),
    "ethash": (300, 3000),
}
"""Two small sizes per kernel for the GPU correctness checks (CPU references are slow)."""

ETHASH_DAG_BYTES = 1 << 30
"""Default DAG: 1 GiB of random bytes (far larger than the H100's 50 MB L2)."""

ETHASH_TEST_DAG_BYTES = 4 * (1 << 20) - 3 * 128
"""A few MiB, not a power of two (exercises the modulo), for the correctness tests."""

FOUND_SENTINEL = np.uint64(0xFFFFFFFFFFFFFFFF)
"""Initial value of every found_nonces slot (unused slots keep it)."""

BENCH_MAX_FOUND = 1024
BENCH_EXPECTED_HITS = 8
"""Benchmark launches: the target gives about this many hits per launch (Poisson), far
below BENCH_MAX_FOUND, so the found list is complete and comparable."""

SMALL_TARGET = (1 << 60) - 1
"""small=True: a value hits with probability 1/16."""

KERNEL_NAMES = {
    "sha256": "sha256_search",
    "blake256": "blake256_search",
    "blake2b": "blake2b_search",
    "ethash": "ethash_search",
}

HEADER_WORDS = {"sha256": 20, "blake256": 20, "blake2b": 20, "ethash": 8}

# argument positions (identical in the four kernels)
ARG_HEADER, ARG_START, ARG_NUM, ARG_TARGET, ARG_HASHES, ARG_COUNT, ARG_FOUND, ARG_MAX_FOUND = range(8)
ARG_DAG, ARG_NUM_PAGES = 8, 9


def kernel_file(name: str) -> Path:
    """The packaged ``.cu`` file of a crypto kernel (``sha256`` -> ``.../kernels/sha256.cu``)."""
    try:
        from importlib.resources import files

        path = Path(str(files("hfuse.bench.kernels") / f"{name}.cu"))
        if path.is_file():
            return path
    except Exception:  # pragma: no cover - unusual packaging
        pass
    return Path(__file__).resolve().parent.parent / "kernels" / f"{name}.cu"


def kernel_spec(name: str, block=None) -> KernelSpec:
    return KernelSpec(file=kernel_file(name), name=KERNEL_NAMES[name],
                      block=Dim3.of(block) if block is not None else Dim3(BLOCK), tunable=False)


def sweep_sizes(default: int, points: int = SWEEP_POINTS) -> tuple[int, ...]:
    """``points`` sizes, geometric from default/4 to default*4, multiples of BLOCK."""
    out = []
    for k in range(points):
        s = default * 2.0 ** (-2 + 4 * k / (points - 1))
        out.append(max(BLOCK, int(round(s / BLOCK)) * BLOCK))
    return tuple(out)


def bench_target(size: int, expected_hits: int = BENCH_EXPECTED_HITS) -> int:
    """A target giving ``expected_hits`` hits on average among ``size`` uniform values."""
    return max(0, min((1 << 64) - 1, (expected_hits << 64) // max(1, int(size)) - 1))


def default_grid(size: int, block: Dim3) -> Dim3:
    """BLOCKS_PER_SM blocks per SM of the current device, no more than one thread per nonce."""
    import cupy

    sms = int(cupy.cuda.Device().attributes["MultiProcessorCount"])
    needed = max(1, math.ceil(int(size) / block.size))
    return Dim3(max(1, min(sms * BLOCKS_PER_SM, needed)))


_DAG_CACHE: dict = {}


def ethash_dag(dag_bytes: int = ETHASH_DAG_BYTES, seed: int = 0):
    """A random DAG of ``dag_bytes`` bytes (uint32 words, on the current device), generated
    on the GPU once per (dag_bytes, seed, device) and cached in the process."""
    import cupy

    dag_bytes = int(dag_bytes)
    if dag_bytes <= 0 or dag_bytes % 128:
        raise ValueError(f"dag_bytes must be a positive multiple of 128, got {dag_bytes}")
    if dag_bytes // 128 > 0xFFFFFFFF:
        raise ValueError("the DAG may hold at most 2**32 - 1 pages")
    key = (dag_bytes, int(seed), cupy.cuda.Device().id)
    dag = _DAG_CACHE.get(key)
    if dag is None:
        rs = cupy.random.RandomState(seed=(int(seed) * 0x9E3779B1 + 0xE7A5) & 0xFFFFFFFF)
        dag = rs.randint(0, 1 << 32, size=dag_bytes // 4, dtype=cupy.uint32)
        _DAG_CACHE[key] = dag
    return dag


def clear_dag_cache() -> None:
    _DAG_CACHE.clear()


def _make(name: str, size: int, *, block=None, seed: int = 0, small: bool = False,
          dag_bytes: int | None = None, target: int | None = None,
          max_found: int | None = None) -> KernelLaunch:
    import cupy

    size = int(size)
    if size < 1:
        raise ValueError("size (nonces per launch) must be at least 1")
    spec = kernel_spec(name, block)
    rng = np.random.default_rng([int(seed), sum(map(ord, name))])
    header = cupy.asarray(rng.integers(0, 1 << 32, HEADER_WORDS[name], dtype=np.uint32))
    start_nonce = int(rng.integers(0, 1 << 62, dtype=np.uint64))

    if small:
        tgt = SMALL_TARGET if target is None else int(target)
        mf = size if max_found is None else int(max_found)
        hashes = cupy.zeros(size, dtype=cupy.uint64)
    else:
        tgt = bench_target(size) if target is None else int(target)
        mf = BENCH_MAX_FOUND if max_found is None else int(max_found)
        hashes = np.uint64(0)  # a null pointer: values are not recorded
    found_count = cupy.zeros(1, dtype=cupy.uint32)
    found_nonces = cupy.full(max(1, mf), FOUND_SENTINEL, dtype=cupy.uint64)

    args = [header, np.uint64(start_nonce), np.uint64(size), np.uint64(tgt), hashes,
            found_count, found_nonces, np.uint32(mf)]
    if name == "ethash":
        if dag_bytes is None:
            dag_bytes = ETHASH_TEST_DAG_BYTES if small else ETHASH_DAG_BYTES
        dag = ethash_dag(dag_bytes, seed)
        args += [dag, np.uint32(dag.size // 32)]

    outputs = [Output(ARG_COUNT, "exact"), Output(ARG_FOUND, "unordered")]
    if small:
        outputs.insert(0, Output(ARG_HASHES, "exact"))
    return KernelLaunch(
        kernel=spec,
        args=args,
        outputs=outputs,
        grid=default_grid(size, spec.block),
        grid_free=True,
        label=name,
    )


def make_sha256(size: int, *, block=None, seed: int = 0, small: bool = False, **kw) -> KernelLaunch:
    return _make("sha256", size, block=block, seed=seed, small=small, **kw)


def make_blake256(size: int, *, block=None, seed: int = 0, small: bool = False, **kw) -> KernelLaunch:
    return _make("blake256", size, block=block, seed=seed, small=small, **kw)


def make_blake2b(size: int, *, block=None, seed: int = 0, small: bool = False, **kw) -> KernelLaunch:
    return _make("blake2b", size, block=block, seed=seed, small=small, **kw)


def make_ethash(size: int, *, block=None, seed: int = 0, small: bool = False,
                dag_bytes: int | None = None, **kw) -> KernelLaunch:
    """``dag_bytes``: DAG size (default 1 GiB; small=True: ETHASH_TEST_DAG_BYTES)."""
    return _make("ethash", size, block=block, seed=seed, small=small, dag_bytes=dag_bytes, **kw)


_MEANING = {
    "sha256": "nonces per launch (double SHA-256 of an 80-byte header each)",
    "blake256": "nonces per launch (BLAKE-256 of an 80-byte header each)",
    "blake2b": "nonces per launch (BLAKE2b-512 of an 80-byte header each)",
    "ethash": "nonces per launch (hashimoto: 64 random 128-byte reads of a 1 GiB DAG each)",
}

_MAKERS = {"sha256": make_sha256, "blake256": make_blake256, "blake2b": make_blake2b,
           "ethash": make_ethash}

WORKLOADS: dict[str, Workload] = {
    name: Workload(
        name=name,
        make=_MAKERS[name],
        default_size=DEFAULT_SIZES[name],
        sweep=sweep_sizes(DEFAULT_SIZES[name]),
        default_block=Dim3(BLOCK),
        tunable=False,
        size_meaning=_MEANING[name],
        test_sizes=TEST_SIZES[name],
    )
    for name in ("sha256", "blake256", "blake2b", "ethash")
}


def reference_outputs(launch: KernelLaunch, name: str | None = None, dag_host=None):
    """The CPU reference of a crypto launch: (values, sorted found nonces).

    Reads the inputs back from the device (header, start, count, target, DAG). ``dag_host``
    may pass the DAG already on the host.
    """
    from ..reference.crypto import search

    name = name or launch.label or next(k for k, v in KERNEL_NAMES.items() if v == launch.kernel.name)
    a = launch.args
    header = a[ARG_HEADER].get()
    dag = None
    if name == "ethash":
        dag = dag_host if dag_host is not None else a[ARG_DAG].get()
    return search(name, header, int(a[ARG_START]), int(a[ARG_NUM]), int(a[ARG_TARGET]), dag)
