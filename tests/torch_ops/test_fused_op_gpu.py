"""hfuse.torch on a GPU: the fused op equals the unfused kernels bit for bit, eagerly,
under torch.compile(fullgraph=True) and in CUDA graph capture and replay; a plan that
declines computes the same through the same callable; bad arguments are refused."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.errors import HFuseError
from hfuse.tuning.tuner import TuneSettings

from .example_inputs import make_args, make_kernels
from hfuse.tuning.launcher import launcher_for

pytestmark = pytest.mark.gpu
torch = pytest.importorskip("torch", reason="hfuse.torch needs PyTorch; this machine has none")

FUSE = TuneSettings(caps=False, neighbour_caps=False, refine=False, balance_grids=False, warmup_ms=1, rep_ms=2,
                    min_gain=-100.0)  # always fuse: correctness, not speed
DECLINE = TuneSettings(caps=False, neighbour_caps=False, refine=False, balance_grids=False, warmup_ms=1, rep_ms=2,
                       min_gain=100.0)  # never fuse
SMALL = dict(rows=1 << 14, bags=1 << 10, n=1 << 16)


def unfused(args_per_kernel) -> list[np.ndarray]:
    """The outputs of the original kernels, each launched alone from its own device side."""
    from dataclasses import replace

    from hfuse.api import device_source
    from hfuse.launch import KernelLaunch, Output
    from hfuse.runtime.arrays import as_device_array
    from hfuse.runtime.compile import Compiler
    from hfuse.runtime.execute import prepare, run_once

    from hfuse.frontend.options import CompileOptions
    from hfuse.torch import kernel_params

    kernels = make_kernels()
    compiler, results = Compiler(), []
    for kernel, args, params in zip(kernels, args_per_kernel, kernel_params(kernels, CompileOptions())):
        alone = device_source(kernel.spec)
        values = [as_device_array(a) if p.kind == "tensor" else np.dtype(p.scalar).type(a) for a, p in zip(args, params)]
        launch = KernelLaunch(replace(kernel.spec, name=alone.qualified_name), values,
                              [Output(o) for o in kernel.outputs], grid=kernel.grid_for(args, kernel.spec.block),
                              source=alone.source)
        torch.cuda.synchronize()
        results += run_once(prepare(launch, compiler))
    return results


def outputs(args_per_kernel) -> list[np.ndarray]:
    torch.cuda.synchronize()
    return [args_per_kernel[0][3].cpu().numpy(), args_per_kernel[1][1].cpu().numpy()]


def same_bits(got, expected) -> bool:
    return all(g.tobytes() == e.tobytes() for g, e in zip(got, expected))


@pytest.fixture(scope="module")
def fused(tmp_path_factory):
    from hfuse.torch import fused_op

    return fused_op(make_kernels(), make_args(torch, 0, **SMALL), settings=FUSE,
                    cache_dir=tmp_path_factory.mktemp("plans"))


@pytest.fixture(scope="module")
def declined(tmp_path_factory):
    from hfuse.torch import fused_op

    return fused_op(make_kernels(), make_args(torch, 0, **SMALL), settings=DECLINE,
                    cache_dir=tmp_path_factory.mktemp("plans"))


def test_plans_fuse_and_decline_as_asked(fused, declined):
    assert fused.plan.should_fuse and not declined.plan.should_fuse
    assert declined.plan.unfused_way in ("serial", "two_streams", "graph")


@pytest.mark.parametrize("which", ["fused", "declined"])
def test_eager_call_equals_the_unfused_kernels(request, which):
    op = request.getfixturevalue(which)
    args = make_args(torch, 1, **SMALL)
    expected = unfused(make_args(torch, 1, **SMALL))
    op(*args)
    assert same_bits(outputs(args), expected)


@pytest.mark.parametrize("which", ["fused", "declined"])
def test_torch_compile_fullgraph_equals_the_unfused_kernels(request, which):
    op = request.getfixturevalue(which)

    def forward(a, b):
        op(a, b)
        return a[3] * 2.0, b[1] + 1

    compiled = torch.compile(forward, fullgraph=True)
    args = make_args(torch, 2, **SMALL)
    expected = unfused(make_args(torch, 2, **SMALL))
    doubled, shifted = compiled(*args)
    torch.cuda.synchronize()
    assert same_bits(outputs(args), expected)
    assert torch.equal(doubled, args[0][3] * 2.0) and torch.equal(shifted, args[1][1] + 1)


@pytest.mark.parametrize("which", ["fused", "declined"])
def test_cuda_graph_capture_and_replay_equal_the_unfused_kernels(request, which):
    op = request.getfixturevalue(which)
    args = make_args(torch, 3, **SMALL)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):  # warm-up outside capture, as PyTorch asks
        op(*args)
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        op(*args)
    for seed in (4, 5):  # new inputs copied into the captured tensors, then replay
        new = make_args(torch, seed, **SMALL)
        for static, fresh in zip(args, new):
            for s, f in zip(static, fresh):
                if isinstance(s, torch.Tensor):
                    s.copy_(f)
        graph.replay()
        assert same_bits(outputs(args), unfused(make_args(torch, seed, **SMALL)))


def test_registered_op_through_the_dispatcher_equals_the_unfused_kernels(fused):
    """``op.op`` is ``torch.ops.hfuse.<name>``: what torch.compile traces; eager calls skip the dispatcher."""
    args = make_args(torch, 8, **SMALL)
    expected = unfused(make_args(torch, 8, **SMALL))
    assert fused.op is getattr(torch.ops.hfuse, fused.name)
    fused.op(*args[0], *args[1])
    assert same_bits(outputs(args), expected)


def test_bad_arguments_are_refused_with_the_parameter_named(fused):
    args = make_args(torch, 6, **SMALL)
    bad_dtype = [list(args[0]), args[1]]
    bad_dtype[0][0] = args[0][0].double()
    with pytest.raises(HFuseError, match="k0_table.*float64.*float32"):
        fused(*bad_dtype)
    strided = [list(args[0]), args[1]]
    strided[0][3] = torch.empty(args[0][3].shape[1], args[0][3].shape[0], device="cuda").t()
    with pytest.raises(HFuseError, match="k0_out.*not contiguous"):
        fused(*strided)
    on_host = [list(args[0]), args[1]]
    on_host[0][1] = args[0][1].cpu()
    with pytest.raises(HFuseError, match="k0_indices.*cpu"):
        fused(*on_host)
    too_big = [args[0], list(args[1])]
    too_big[1][2] = 1 << 40
    with pytest.raises(HFuseError, match="k1_n.*does not fit"):
        fused(*too_big)
    with pytest.raises(HFuseError, match="takes 6 arguments"):
        fused(args[0][:5], args[1])


def test_cupy_launcher_takes_torch_tensors_without_copies(fused):
    """``launcher_for(plan)`` (the CuPy path) takes the tensors themselves (__cuda_array_interface__)."""
    args = make_args(torch, 7, **SMALL)
    expected = unfused(make_args(torch, 7, **SMALL))
    run = launcher_for(fused.plan)
    scalars = [[np.int32(v) for v in args[0][4:]], [np.int32(args[1][2]), np.uint32(args[1][3]), np.int32(args[1][4])]]
    torch.cuda.synchronize()
    run([args[0][:4] + scalars[0], args[1][:2] + scalars[1]])
    assert same_bits(outputs(args), expected)
