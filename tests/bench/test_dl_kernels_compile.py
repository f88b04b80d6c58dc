"""The deep-learning kernel files compile with nvcc (sm_90) and keep the rules the
fusion front end relies on: no #include, no __launch_bounds__, every file-scope name
prefixed with the kernel's file name, so that any two files share a translation unit."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hfuse.bench.workloads.dl import kernel_file

KERNELS = {
    "maxpool.cu": "maxpool2d_forward",
    "batchnorm.cu": "batchnorm_collect_statistics",
    "upsample.cu": "upsample_bilinear2d",
    "im2col.cu": "im2col",
    "hist.cu": "histogram",
}

PTXAS_REGS = re.compile(r"Used (\d+) registers")
PTXAS_SPILLS = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
PTXAS_FUNC = re.compile(r"Compiling entry function '([^']+)'")


def ptxas_report(text: str) -> dict[str, dict[str, int]]:
    """Registers and spills of each entry function in ``nvcc -Xptxas -v`` output."""
    report: dict[str, dict[str, int]] = {}
    current = None
    for line in text.splitlines():
        if m := PTXAS_FUNC.search(line):
            current = m.group(1)
            report[current] = {}
        elif current and (m := PTXAS_SPILLS.search(line)):
            report[current]["spill_stores"], report[current]["spill_loads"] = int(m.group(1)), int(m.group(2))
        elif current and (m := PTXAS_REGS.search(line)):
            report[current]["registers"] = int(m.group(1))
    return report


def _nvcc(src: Path, out_dir: Path) -> str:
    nvcc = shutil.which("nvcc")
    assert nvcc, "nvcc is not on PATH"
    proc = subprocess.run(
        [nvcc, "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", str(out_dir / (src.stem + ".cubin")), str(src)],
        capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return proc.stdout + proc.stderr


@pytest.mark.nvcc
@pytest.mark.parametrize("file,kernel", sorted(KERNELS.items()))
def test_kernel_compiles_for_sm90(tmp_path, file, kernel):
    src = tmp_path / file
    src.write_text(kernel_file(file).read_text())
    report = ptxas_report(_nvcc(src, tmp_path))
    entries = [name for name in report if kernel in name]
    assert len(entries) == 1, f"no ptxas report for {kernel}: {report}"
    info = report[entries[0]]
    print(f"{file}: {kernel}: {info}")
    assert info["registers"] > 0
    assert info["spill_stores"] == 0 and info["spill_loads"] == 0


@pytest.mark.nvcc
def test_all_kernels_share_one_translation_unit(tmp_path):
    src = tmp_path / "all_dl.cu"
    src.write_text("\n".join(kernel_file(f).read_text() for f in sorted(KERNELS)))
    report = ptxas_report(_nvcc(src, tmp_path))
    for kernel in KERNELS.values():
        assert any(kernel in name for name in report), (kernel, report)


def _strip_comments(text: str) -> str:
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


@pytest.mark.parametrize("file,kernel", sorted(KERNELS.items()))
def test_kernel_file_rules(file, kernel):
    text = _strip_comments(kernel_file(file).read_text())
    prefix = file.removesuffix(".cu")
    assert "#include" not in text
    assert "__launch_bounds__" not in text
    assert re.search(rf"__global__\s+void\s+{kernel}\s*\(", text)
    for macro in re.findall(r"#define\s+(\w+)", text):
        assert macro.startswith(prefix.upper() + "_"), macro
    for helper in re.findall(r"__device__\s+__forceinline__\s+[\w\s\*&]+?\b(\w+)\s*\(", text):
        assert helper.startswith(prefix + "_"), helper
    assert "__device__" not in re.sub(r"__device__\s+__forceinline__", "", text), "helpers are __device__ __forceinline__"
    # File-scope typedefs, usings and constants (lines starting at column 0) are prefixed.
    for line in re.findall(r"^(?:typedef|using|constexpr|const|static|__constant__|__device__\s+(?!__forceinline__))[^\n]*", text, flags=re.M):
        assert prefix in line.lower(), line
    # Block size is a runtime property: the kernels read blockDim.
    assert "blockDim" in text
