"""Argument checks of hfuse.torch ops on the CPU (needs torch; skipped where it is not
installed): each refusal names the kernel, the parameter and what to do; accepted values
become what the launcher passes."""
from __future__ import annotations

import numpy as np
import pytest

from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions

from .example_inputs import make_kernels

torch = pytest.importorskip("torch", reason="hfuse.torch needs PyTorch; this machine has none")


@pytest.fixture(scope="module")
def checks():
    from hfuse.torch import kernel_params
    from hfuse.torch.op import ArgumentCheck

    params = kernel_params(make_kernels(), CompileOptions())
    cpu = torch.device("cpu")  # the checks do not care which device, only that it is the op's
    return ([ArgumentCheck("embedding_bag_sum", params[0], cpu), ArgumentCheck("feature_hash", params[1], cpu)],
            [ArgumentCheck("embedding_bag_sum", params[0], cpu, python_values=True)])


def bag_args():
    return [torch.zeros(16, 4), torch.zeros(8, dtype=torch.int64), torch.arange(0, 9, 4, dtype=torch.int64),
            torch.zeros(2, 4), 2, 4]


def test_accepted_arguments_become_addresses_and_typed_scalars(checks):
    (bag, hashed), (bag_ints,) = checks
    args = bag_args()
    values = bag(args)
    assert values[0] == np.uint64(args[0].data_ptr()) and values[0].dtype == np.uint64
    assert values[4] == 2 and values[4].dtype == np.int32
    direct = bag_ints(args)
    assert type(direct[0]) is int and direct[0] == args[0].data_ptr() and type(direct[5]) is int
    keys = torch.zeros(4, dtype=torch.int32)  # an unsigned* takes int32 (same bits) as well as uint32
    assert hashed([keys, torch.zeros(4, dtype=torch.int32), 4, 0xFFFFFFFF, 7])[3].dtype == np.uint32


@pytest.mark.parametrize("index, value, message", [
    (0, torch.zeros(16, 4, dtype=torch.float64), r"k0_table \(float\*\) has dtype torch.float64; the kernel reads "
                                                  r"torch.float32"),
    (3, torch.zeros(4, 2).t(), r"k0_out \(float\*\) is not contiguous"),
    (1, [0, 1], r"k0_indices \(int64_t\*\) must be a tensor, got list"),
    (4, 1 << 40, r"k0_num_bags \(int\) holds -2147483648..2147483647; 1099511627776 does not fit"),
    (5, 2.5, r"k0_dim \(int\) is an integer parameter; got 2.5"),
    (4, np.int64(2), r"k0_num_bags \(int\) takes int32 scalars; got a NumPy int64"),
    (5, torch.tensor(3), r"k0_dim \(int\) is a scalar parameter; got a tensor"),
])
def test_refusals_name_kernel_and_parameter(checks, index, value, message):
    (bag, _), _ = checks
    args = bag_args()
    args[index] = value
    with pytest.raises(HFuseError, match=f"'embedding_bag_sum' argument {message}"):
        bag(args)


def test_wrong_count_lists_the_parameters(checks):
    (bag, _), _ = checks
    with pytest.raises(HFuseError, match="takes 6 arguments .*k0_table, k0_indices"):
        bag(bag_args()[:5])
