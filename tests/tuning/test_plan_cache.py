"""Plan JSON round trip and the plan cache's hits and misses."""
from __future__ import annotations

import numpy as np

from hfuse.layouts import VERTICAL
from hfuse.launch import KernelLaunch, Output
from hfuse.runtime.timing import Timing
from hfuse.spec import Dim3, KernelSpec
from hfuse.tuning.cache import PlanCache, cache_key, default_cache_dir, describe_launch
from hfuse.fusion import Fusion
from hfuse.tuning.candidates import Candidate
from hfuse.tuning.plan import Baselines, CandidateResult, Plan, load_plan
from hfuse.registers import RegisterCap


def make_plan() -> Plan:
    t = Timing.of([1.0, 1.1, 0.9, 1.2, 1.0])
    best = Candidate(Fusion((Dim3(256), Dim3(32, 8)), registers=RegisterCap(min_blocks=4)))
    return Plan(
        kernels=["maxpool", "hist<float, 4>"],
        decision="fuse",
        reason="1.31x faster than two streams",
        blocks=[Dim3(256), Dim3(32, 8)],
        register_cap=RegisterCap(min_blocks=4),
        fused_block=Dim3(512),
        grid=Dim3(1024),
        grids=[Dim3(1024), Dim3(512)],
        shared_mem=4096,
        chosen=best.label,
        speedup=1.31,
        candidates=[
            CandidateResult(best, time=t, registers=32, local_bytes=0, spill_stores=0, spill_loads=0,
                            static_smem=1024, occupancy=1.0, blocks_per_sm=4, verified=True),
            CandidateResult(Candidate(Fusion((Dim3(256), Dim3(32, 8)), VERTICAL)), error="mismatch in output 1"),
        ],
        baselines=Baselines(alone={"maxpool": t, "hist": t}, two_streams=t, graph=None),
        gpu="NVIDIA H100 80GB HBM3", driver="13.0", cuda_runtime="13.0", source_hash="abc",
        settings={"granularity": 128},
    )


def test_plan_round_trip(tmp_path):
    plan = make_plan()
    again = Plan.from_json(plan.to_json())
    assert again == plan
    path = plan.save(tmp_path / "sub" / "plan.json")
    loaded = load_plan(path)
    assert loaded == plan and loaded.should_fuse
    assert loaded.candidates[0].time_ms == 1.0 and loaded.candidates[1].time_ms is None


def test_do_not_fuse_plan_round_trip():
    plan = Plan(kernels=["a", "b"], decision="do_not_fuse", reason="no candidate beat two streams (best 0.97x)")
    again = Plan.from_json(plan.to_json())
    assert again == plan and not again.should_fuse and again.register_cap is None


def launch(n=1 << 20, block=256, source="k", name="k", dtype=np.float32):
    class FakeArray:  # dtype and shape are all the cache reads from an array
        def __init__(self, shape, dt):
            self.shape, self.dtype = shape, np.dtype(dt)

    return KernelLaunch(
        kernel=KernelSpec(file=f"{name}.cu", name=name, block=block, tunable=True),
        args=[FakeArray((n,), dtype), FakeArray((n,), dtype), np.int32(n)],
        outputs=[Output(0)],
        grid=lambda b: Dim3(-(-n // b.size)),
        source=source,
    )


def key_for(launches, sources=("src a", "src b"), gpu="H100", toolkit="sm_90 nvrtc 13.0", settings=None):
    return cache_key(gpu=gpu, toolkit=toolkit, sources=list(sources),
                     launches=[describe_launch(l) for l in launches], settings=settings or {"g": 128})


def test_cache_hit_and_misses(tmp_path):
    cache = PlanCache(tmp_path)
    base = [launch(name="a"), launch(name="b")]
    key = key_for(base)
    assert cache.get(key) is None
    cache.put(key, make_plan())
    got = cache.get(key)
    assert got is not None and got.cache_key == key
    # The same description built again hits.
    assert key_for([launch(name="a"), launch(name="b")]) == key
    # Any change misses: a source, a size, a dtype, a block, the GPU, the toolkit, settings.
    changed = [
        key_for(base, sources=("src a", "src b changed")),
        key_for([launch(name="a", n=1 << 21), launch(name="b")]),
        key_for([launch(name="a", dtype=np.float64), launch(name="b")]),
        key_for([launch(name="a", block=128), launch(name="b")]),
        key_for(base, gpu="H200"),
        key_for(base, toolkit="sm_90 nvrtc 13.1"),
        key_for(base, settings={"g": 64}),
    ]
    assert len(set(changed)) == len(changed) and key not in changed
    assert all(cache.get(k) is None for k in changed)


def test_cache_dir_from_env(tmp_path, monkeypatch):
    monkeypatch.setenv("HFUSE_CACHE_DIR", str(tmp_path / "c"))
    assert default_cache_dir() == tmp_path / "c"
    assert PlanCache().directory == tmp_path / "c"
    monkeypatch.delenv("HFUSE_CACHE_DIR")
    assert default_cache_dir().parts[-2:] == (".cache", "hfuse")


def test_corrupt_entry_is_a_miss(tmp_path):
    cache = PlanCache(tmp_path)
    cache.path_for("deadbeef").write_text("{not json")
    assert cache.get("deadbeef") is None


def test_compile_options_change_the_key():
    from hfuse.frontend.options import CompileOptions

    base = [launch(name="a"), launch(name="b")]

    def key(options, headers=()):
        return cache_key(gpu="H100", toolkit="sm_90 nvrtc 13.0", sources=["a", "b"], launches=[describe_launch(l) for l in base],
                         options=options.to_dict(), headers=headers)

    plain = key(CompileOptions())
    assert key(CompileOptions()) == plain
    assert len({plain, key(CompileOptions(defines=["BLOCK=16"])), key(CompileOptions(std="c++14")),
                key(CompileOptions(include_dirs=["inc"])), key(CompileOptions(), [["h.cuh", "0" * 64]])}) == 5


def test_editing_a_user_header_misses_the_cache(tmp_path):
    """The tuner's key hashes every header the sources read under the options."""
    import dataclasses
    from types import SimpleNamespace

    from hfuse.frontend.options import CompileOptions
    from hfuse.tuning.tuner import TuneSettings, _FrontEnd

    (tmp_path / "inc").mkdir()
    header = tmp_path / "inc" / "tile.cuh"
    header.write_text("#define TILE 16\n")
    a = launch(name="a", source='#include "tile.cuh"\n__global__ void a(float* x) { x[0] = TILE; }\n')
    a = dataclasses.replace(a, kernel=KernelSpec(tmp_path / "a.cu", "a", 256))  # beside no header: found via -I
    b = launch(name="b", source="__global__ void b(float* x) {}\n")
    limits = SimpleNamespace(name="H100", driver_version="13.0", arch="sm_90")
    options = CompileOptions(include_dirs=[tmp_path / "inc"])

    def key() -> str:  # the front end runs anew, as each tune() call does
        return _FrontEnd.of([a, b], options, limits).key([a, b], TuneSettings())

    first = key()
    assert key() == first
    header.write_text("#define TILE 32\n")
    assert key() != first


def test_plan_keeps_its_compile_options():
    from hfuse.frontend.options import NO_OPTIONS, CompileOptions

    plan = make_plan()
    plan.options = CompileOptions(include_dirs=["/src/inc"], defines=["BLOCK=16"], pre_includes=["/src/pre.h"],
                                  std="c++14", arch="sm_90")
    again = Plan.from_json(plan.to_json())
    assert again.options == plan.options and again == plan
    old = plan.to_dict()
    del old["options"]  # a plan saved before options existed
    assert Plan.from_dict(old).options == NO_OPTIONS


def test_a_plan_serves_every_gpu_of_its_name_and_toolkit_whatever_the_driver(tmp_path):
    from types import SimpleNamespace

    from hfuse.frontend.options import NO_OPTIONS
    from hfuse.tuning.tuner import TuneSettings, _FrontEnd

    pair = [launch(name="a", source="__global__ void a(float* x) {}\n"),
            launch(name="b", source="__global__ void b(float* x) {}\n")]

    def key(**gpu) -> str:
        limits = SimpleNamespace(**{"name": "NVIDIA H100 80GB HBM3", "driver_version": "580.0", "arch": "sm_90", **gpu})
        return _FrontEnd.of(pair, NO_OPTIONS, limits).key(pair, TuneSettings())

    assert key() == key(driver_version="590.1")  # another host's driver: the same plan
    assert key() != key(name="NVIDIA A100-SXM4-80GB", arch="sm_80")  # never another GPU
