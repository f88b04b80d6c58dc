"""Tuning sources that need nvcc's flags: every compile (originals, candidates, the plan's
launcher) gets the same -I/-D/-include/-std, and the plan remembers them.

The kernels are written the way the issue found them: an include guard, a kernel under
``#ifdef USE_HASH``, a loop macro and a helper in a header only ``-I`` reaches, a type
from a ``-include`` file, and a ``register`` variable that C++17 removed (hfuse drops the
keyword from what it compiles, so the default dialect tunes it too).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from hfuse.frontend.options import CompileOptions
from hfuse.launch import KernelLaunch, Output
from hfuse.spec import Dim3, KernelSpec
from hfuse.tuning.plan import Plan
from hfuse.tuning.tuner import TuneSettings, tune
from hfuse.tuning.launcher import launcher_for
from hfuse.tuning.report import plan_table

pytestmark = pytest.mark.gpu

KERN = """#ifndef KERN_CUH
#define KERN_CUH
#define LOOP(i, n) for (long long i = blockIdx.x * (long long)blockDim.x + threadIdx.x; i < (n); \\
                        i += (long long)blockDim.x * gridDim.x)
__device__ inline unsigned mix(unsigned x, unsigned r) { return ((x << 5) | (x >> 27)) ^ (x * 0x01000193u + r); }
#endif
"""

PRE = "struct Tag { int v; };  // defined once: the fused file must not get -include again\n"

GATHER = """#ifndef GATHER_CU
#define GATHER_CU
#include "kern.cuh"
__global__ void gather(const float* table, const unsigned* start, float* out, long long n, unsigned mask) {
  register int hops = 8;
  Tag tag = {hops};
  LOOP(i, n) {
    unsigned j = start[i];
    float acc = 0.f;
    for (int k = 0; k < tag.v; ++k) { j = mix(j, k) + __float_as_uint(acc); acc += table[j & mask]; }
    out[i] = acc;
  }
}
#endif
"""

HASH = """#include <kern.cuh>
#ifdef USE_HASH
__global__ void hashloop(const unsigned* seed, unsigned* out, long long n, int rounds) {
  LOOP(i, n) {
    unsigned x = seed[i];
    for (int r = 0; r < rounds; ++r) x = mix(x, r);
    out[i] = x;
  }
}
#endif
"""

SETTINGS = TuneSettings(granularity=128, caps=False, neighbour_caps=False, refine=False, balance_grids=False,
                        warmup_ms=5, rep_ms=20, workers=4)


@pytest.fixture
def cp():
    return pytest.importorskip("cupy")


def _launches(cp, root: Path) -> list[KernelLaunch]:
    rng = cp.random.RandomState(3)
    n, m = 1 << 20, 1 << 18
    table = rng.standard_normal(1 << 22, dtype=cp.float32)
    start = rng.randint(0, 1 << 30, size=n, dtype=cp.uint32)
    seeds = rng.randint(0, 1 << 30, size=m, dtype=cp.uint32)
    sms = cp.cuda.Device().attributes["MultiProcessorCount"]
    gather = KernelLaunch(KernelSpec(root / "gather.cu", "gather", 256, tunable=True),
                          [table, start, cp.zeros(n, cp.float32), np.int64(n), np.uint32((1 << 22) - 1)], [Output(2)],
                          grid=Dim3(sms * 4), grid_free=True)
    hashloop = KernelLaunch(KernelSpec(root / "hash.cu", "hashloop", 256, tunable=True),
                            [seeds, cp.zeros(m, cp.uint32), np.int64(m), np.int32(500)], [Output(1)],
                            grid=Dim3(sms * 4), grid_free=True)
    return [gather, hashloop]


def test_tuning_compiles_everything_with_the_users_flags(cp, tmp_path):
    for name, text in {"gather.cu": GATHER, "hash.cu": HASH, "inc/kern.cuh": KERN, "pre.h": PRE}.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    options = CompileOptions(include_dirs=[tmp_path / "inc"], defines=["USE_HASH"], pre_includes=[tmp_path / "pre.h"],
                             std="c++14")
    plan = tune(_launches(cp, tmp_path), SETTINGS, cache_dir=tmp_path / "cache", progress=False, options=options)
    print(plan_table(plan))
    assert not [r.error for r in plan.candidates if r.error and "compile" in r.error]
    assert any(r.verified for r in plan.candidates)
    assert plan.options.std == "c++14" and plan.options.pre_includes == (tmp_path / "pre.h",)
    assert plan.options.cuda_arch >= 700  # the GPU's device pass, not the default
    again = Plan.from_json(plan.to_json())
    assert again.options == plan.options
    if again.should_fuse:
        launcher_for(again)  # compiles the fused source with the saved options (and no second -include)
    # Under the default -std=c++17 too: the keyword is dropped from every file hfuse compiles.
    default = tune(_launches(cp, tmp_path), SETTINGS, use_cache=False, progress=False,
                   options=CompileOptions(include_dirs=[tmp_path / "inc"], defines=["USE_HASH"],
                                          pre_includes=[tmp_path / "pre.h"]))
    assert any(r.verified for r in default.candidates)
