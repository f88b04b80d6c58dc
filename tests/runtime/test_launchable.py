"""runtime/launchable.py: whether ptxas's numbers let a kernel launch at its block."""
from __future__ import annotations

import pytest

from hfuse.cli import main
from hfuse.runtime.launchable import LaunchCheck, launch_check
from hfuse.runtime.ptxas import Resources

from corpus import cases as C


def test_registers_are_counted_per_warp_in_units_of_eight():
    assert LaunchCheck("k", 1024, 64, 0, 0).block_registers == 65536
    assert LaunchCheck("k", 1000, 61, 0, 0).block_registers == 64 * 32 * 32  # 32 warps, 61 rounds up to 64
    assert LaunchCheck("k", 1024, 64, 0, 0).problems == []


def test_a_block_with_too_many_registers_cannot_launch():
    check = launch_check("fused", 1024, Resources("fused", registers=128, static_smem=1024))
    assert len(check.problems) == 1 and "more than the 65,536 a block may have" in check.problems[0]
    assert "CANNOT launch" in check.describe()


def test_static_shared_memory_above_48_kib_is_reported():
    assert "static shared memory" in LaunchCheck("k", 128, 32, 0, 64 * 1024).problems[0]


@pytest.mark.nvcc
def test_fuse_check_compiles_and_reports(tmp_path, capsys):
    path = C.CORPUS / "trust" / "resources.cu"
    code = main(["fuse", str(path), "-k", "heavy_mix:128", "-k", "light_copy:896", "-o", str(tmp_path / "f.cu"),
                 "--check"])
    err = capsys.readouterr().err
    assert code == 0, err
    assert "checked with nvcc -arch=sm_90: heavy_mix_light_copy__hfused:" in err and "x 1024 threads" in err
    assert "can launch" in err
