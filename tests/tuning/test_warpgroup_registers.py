"""Per-part register budgets on Hopper (``setmaxnreg``, sm_90a): the arithmetic of the
budgets, the candidates the tuner makes, and the fused source, compiled by nvcc and NVRTC."""
from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

import hfuse
from hfuse.errors import HFuseError
from hfuse.runtime.device import DeviceLimits
from hfuse.spec import Dim3, KernelSpec
from hfuse.tuning.candidates import Candidate, enumerate_candidates, refine_around
from hfuse.registers import WarpgroupRegisters, entry_registers, register_policy_from_dict
from hfuse.tuning.regcap import warpgroup_budgets

from .test_tuner_gpu import GATHER, HASHLOOP

H100 = DeviceLimits(name="H100", compute_capability=(9, 0), sm_count=132, regs_per_sm=65536, regs_per_block=65536,
                    max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=233472, smem_per_block_optin=232448)
A100 = DeviceLimits(name="A100", compute_capability=(8, 0), sm_count=108, regs_per_sm=65536, regs_per_block=65536,
                    max_threads_per_sm=2048, max_blocks_per_sm=32, smem_per_sm=167936, smem_per_block_optin=166912)


def test_the_entry_count_is_the_sms_share_rounded_down_to_eight():
    assert entry_registers(384, 1) == 168  # what warp-specialised Hopper GEMMs start from
    assert entry_registers(512, 2) == 64
    assert entry_registers(256, 1) == 248  # at most 255, then a multiple of 8


def test_budgets_must_fit_whole_warpgroups_and_the_entry_allocation():
    policy = WarpgroupRegisters(2, (112, 48))
    assert policy.violation([128, 384]) is None  # 112 + 3 x 48 = 256 = 4 warpgroups x 64
    assert "a .inc would wait for ever" in WarpgroupRegisters(2, (112, 56)).violation([128, 384])
    assert "not whole warpgroups" in policy.violation([160, 352])
    assert "2 budgets for 3 parts" in policy.violation([128, 128, 256])
    with pytest.raises(ValueError, match="multiples of 8"):
        WarpgroupRegisters(2, (112, 44))
    with pytest.raises(ValueError, match="24..256"):
        WarpgroupRegisters(2, (264, 24))


def test_the_heavy_part_keeps_its_registers_and_the_others_share_the_rest():
    # 106 registers round up to 112; at 2 blocks of 512 the entry count (64) would cut them
    assert warpgroup_budgets([128, 384], [106, 40]) == [WarpgroupRegisters(2, (112, 48))]
    # two warpgroups at 112 leave 16 each for the other two: below setmaxnreg's 24
    assert warpgroup_budgets([256, 256], [106, 40]) == []
    assert warpgroup_budgets([128, 384], [40, 48]) == []  # the uniform count holds both
    assert warpgroup_budgets([160, 352], [106, 40]) == []  # not warpgroups


def test_candidates_only_on_hopper_and_never_refined_by_a_warp():
    specs = [KernelSpec(Path("a.cu"), "a", 128, tunable=True), KernelSpec(Path("b.cu"), "b", 384, tunable=True)]
    found = [c for c in enumerate_candidates(specs, limits=H100, kernel_registers=[106, 40], caps=False,
                                             warpgroup_registers=True) if isinstance(c.register_cap, WarpgroupRegisters)]
    assert [(c.blocks, c.register_cap) for c in found] == [((Dim3(128), Dim3(384)), WarpgroupRegisters(2, (112, 48)))]
    assert found[0].label == "hfuse 128+384 cap=wg112/48@b2"
    assert not [c for c in enumerate_candidates(specs, limits=A100, kernel_registers=[106, 40], caps=False,
                                                warpgroup_registers=True) if isinstance(c.register_cap, WarpgroupRegisters)]
    assert refine_around(found[0], specs) == []
    again = Candidate.from_dict(found[0].to_dict())
    assert again == found[0] and register_policy_from_dict({"min_blocks": 2, "budgets": [112, 48]}) == found[0].register_cap


def fused_with(policy, blocks=(128, 384), layout="horizontal"):
    specs = [KernelSpec(Path("gather.cu"), "gather", blocks[0]), KernelSpec(Path("hashloop.cu"), "hashloop", blocks[1])]
    return hfuse.fuse(specs, sources={"gather.cu": GATHER, "hashloop.cu": HASHLOOP}, register_cap=policy,
                      layout=layout)


def test_each_part_sets_its_budget_on_entry_and_other_targets_are_refused():
    fused = fused_with(WarpgroupRegisters(2, (112, 48)))
    source = fused.source
    assert "__launch_bounds__(512, 2)" in source
    assert 'setmaxnreg.inc.sync.aligned.u32 112;' in source and 'setmaxnreg.dec.sync.aligned.u32 48;' in source
    # first thing in each part's branch: every thread of its warpgroups runs it, before any leaves
    lines = source.splitlines()
    for part, change in ((1, "setmaxnreg.inc"), (2, "setmaxnreg.dec")):
        opening = next(i for i, l in enumerate(lines) if f"// part {part}:" in l and "threads [" in l)
        assert change in lines[opening + 1] and "hf_block <" in lines[opening + 2]
    assert "#error" in source and "__CUDA_ARCH_FEAT_SM90_ALL" in source
    with pytest.raises(HFuseError, match="vertical fusion"):
        fused_with(WarpgroupRegisters(2, (112, 48)), layout="vertical")
    with pytest.raises(HFuseError, match="not whole warpgroups"):
        fused_with(WarpgroupRegisters(2, (112, 48)), blocks=(160, 352))


@pytest.mark.nvcc
def test_nvcc_compiles_it_for_sm_90a_with_the_entry_count_and_refuses_sm_90(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    path = tmp_path / "fused.cu"
    path.write_text(fused_with(WarpgroupRegisters(2, (112, 48))).source)
    done = subprocess.run(["nvcc", "-arch=sm_90a", "-cubin", "-Xptxas", "-v", str(path), "-o", str(tmp_path / "f.cubin")],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert "Used 64 registers" in done.stderr and "C7508" not in done.stderr  # the entry count the budgets assume
    refused = subprocess.run(["nvcc", "-arch=sm_90", "-cubin", str(path), "-o", str(tmp_path / "g.cubin")],
                             capture_output=True, text=True)
    assert refused.returncode != 0 and "compile it for sm_90a" in refused.stderr


@pytest.mark.nvcc
def test_an_object_file_for_sm_90a_alone_compiles_and_the_message_says_how(tmp_path):
    # nvcc 13's -arch=sm_90a -c also compiles a compute_90 pass, where setmaxnreg has no meaning: the
    # check stops it, and once said only "compile it for sm_90a", which the user had done
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    path = tmp_path / "fused.cu"
    path.write_text(fused_with(WarpgroupRegisters(2, (112, 48))).source)
    done = subprocess.run(["nvcc", "-gencode", "arch=compute_90a,code=sm_90a", "-c", str(path), "-o",
                           str(tmp_path / "f.o")], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    stopped = subprocess.run(["nvcc", "-arch=sm_90a", "-c", str(path), "-o", str(tmp_path / "g.o")],
                             capture_output=True, text=True)
    assert stopped.returncode != 0 and "-gencode arch=compute_90a,code=sm_90a" in stopped.stderr


@pytest.mark.nvrtc
def test_nvrtc_compiles_it_for_sm_90a():
    from hfuse.runtime.compile import Compiler

    fused = fused_with(WarpgroupRegisters(2, (112, 48)))
    binary = Compiler("sm_90a").compile(fused.source, [fused.name_expression])
    assert binary.cubin and "C7508" not in binary.log
