"""Kernel parameters as a PyTorch op takes them (plain Python: runs without torch)."""
from __future__ import annotations

from pathlib import Path

import pytest

from hfuse.api import prepare
from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions
from hfuse.spec import KernelSpec
from hfuse.torch.params import c_type_of, op_params, op_schema

EXAMPLE = Path(__file__).parents[2] / "examples" / "torch" / "kernels.cu"
TEMPLATED = r"""
template <typename T, int N = 4>
__global__ void scale(const T* __restrict__ x, T *y, T factor, long long n, const float4* v) {}
__global__ void odd(float** rows, struct Pair p) {}
"""


def _params(name: str, text: str | None = None, template=()):
    file = Path("t.cu") if text else EXAMPLE
    unit = prepare([KernelSpec(file, name, 128, tuple(template))], sources={str(file): text} if text else None,
                   options=CompileOptions())
    return unit.kernels[0].function


def test_example_kernels_map_to_tensors_and_scalars():
    fn = _params("embedding_bag_sum")
    params = op_params(0, "embedding_bag_sum", fn.params, {}, outputs=[3])
    assert [(p.name, p.kind) for p in params] == [("k0_table", "tensor"), ("k0_indices", "tensor"),
                                                  ("k0_offsets", "tensor"), ("k0_out", "tensor"),
                                                  ("k0_num_bags", "scalar"), ("k0_dim", "scalar")]
    assert params[0].dtypes == ("float32",) and params[1].dtypes == ("int64",)
    assert [p.mutated for p in params] == [False, False, False, True, False, False]
    assert params[4].scalar == "int32" and params[4].schema_type == "int"
    hashed = op_params(1, "feature_hash", _params("feature_hash").params, {}, outputs=[1])
    assert hashed[0].dtypes == ("uint32", "int32") and hashed[3].scalar == "uint32"
    schema = op_schema("fused_x", params + hashed)
    assert schema.startswith("fused_x(Tensor k0_table, Tensor k0_indices, Tensor k0_offsets, Tensor(a0!) k0_out, ")
    assert "Tensor(a1!) k1_buckets" in schema and schema.endswith("int k1_num_buckets) -> ()")


def test_template_arguments_replace_template_parameters():
    fn = _params("scale", TEMPLATED, ("double", "8"))
    types = [c_type_of(p, {"T": "double", "N": "8"}) for p in fn.params]
    assert types == ["double*", "double*", "double", "long long", "float4*"]
    params = op_params(0, "scale<double, 8>", fn.params, {"T": "double", "N": "8"}, outputs=[1])
    assert params[0].dtypes == ("float64",) and params[2].scalar == "float64" and params[4].align == 16


def test_what_an_op_cannot_pass_is_refused_by_name():
    fn = _params("odd", TEMPLATED)
    with pytest.raises(HFuseError, match="'float\\*\\*', a pointer to pointers"):
        op_params(0, "odd", fn.params[:1], {}, outputs=[])
    with pytest.raises(HFuseError, match="parameter 0 of 'odd' has type 'Pair'"):
        op_params(0, "odd", fn.params[1:], {}, outputs=[])
    with pytest.raises(HFuseError, match="cannot be an output"):
        op_params(0, "scale", _params("scale", TEMPLATED, ("float",)).params, {"T": "float"}, outputs=[2])


def test_kernel_params_of_torch_kernels_from_one_front_end_run():
    """``kernel_params`` (what the op checks every call against), template arguments
    substituted, from source strings as ``load_inline`` users have them."""
    from hfuse.torch import kernel_params, torch_kernel

    kernels = [torch_kernel("t.cu", "scale", 128, outputs=[1], grid=4, template_args=("double", "8"),
                            source=TEMPLATED),
               torch_kernel(EXAMPLE, "feature_hash", 256, outputs=[1], grid=lambda args, block: args[2] // block.size)]
    scale, hashed = kernel_params(kernels, CompileOptions())
    assert [(p.name, p.c_type) for p in scale] == [("k0_x", "double*"), ("k0_y", "double*"), ("k0_factor", "double"),
                                                   ("k0_n", "long long"), ("k0_v", "float4*")]
    assert [p.mutated for p in scale] == [False, True, False, False, False]
    assert [p.name for p in hashed] == ["k1_keys", "k1_buckets", "k1_n", "k1_salt", "k1_num_buckets"]
    assert kernels[1].grid_for([None, None, 4096], kernels[1].spec.block).x == 16
