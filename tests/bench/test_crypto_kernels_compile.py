"""CPU checks of the four crypto kernels' sources: the fusion rules, nvcc/ptxas, and an
emulation of each kernel on the host (g++) compared with the CPU reference."""
from __future__ import annotations

import re
import shutil
import subprocess

import numpy as np
import pytest

from hfuse.bench.reference import crypto as ref
from hfuse.bench.workloads import crypto as wl

NAMES = ["sha256", "blake256", "blake2b", "ethash"]
MAX_SPILL_BYTES = 16


def _source(name: str) -> str:
    return wl.kernel_file(name).read_text()


# ----------------------------------------------------------------------------- source rules
@pytest.mark.parametrize("name", NAMES)
def test_source_follows_the_fusion_rules(name):
    src = _source(name)
    code = re.sub(r"//[^\n]*|/\*.*?\*/", "", src, flags=re.S)
    assert "#include" not in code
    for banned in ("__launch_bounds__", "__syncthreads", "extern"):
        assert banned not in code, banned
    assert re.search(rf"__global__\s+void\s+{name}_search\s*\(", code)
    # every file-scope name carries the kernel's prefix
    names = re.findall(r"^typedef\s+[\w\s]+?\s(\w+)\s*;", code, flags=re.M)
    names += re.findall(r"^__constant__\s+[\w\s]+?\s(\w+)\s*\[", code, flags=re.M)
    names += re.findall(r"^__device__[\w\s*]*?\s\**(\w+)\s*\(", code, flags=re.M)
    names += re.findall(r"^__global__\s+void\s+(\w+)\s*\(", code, flags=re.M)
    names += re.findall(r"^#\s*define\s+(\w+)", code, flags=re.M)
    assert len(names) >= 3
    for n in names:
        assert n.startswith(f"{name}_"), f"{name}.cu: file-scope name {n} lacks the prefix"


def test_workload_table():
    assert set(wl.WORKLOADS) == set(NAMES)
    for name, w in wl.WORKLOADS.items():
        assert w.name == name and not w.tunable and w.default_block.size == 128
        assert len(w.sweep) == 8 and list(w.sweep) == sorted(w.sweep)
        assert w.sweep[0] <= w.default_size <= w.sweep[-1]
        assert abs(w.sweep[0] * 4 - w.default_size) <= 4 * 128
        assert len(w.test_sizes) == 2
        assert wl.kernel_file(name).is_file()
        assert wl.kernel_spec(name).name == f"{name}_search"
    assert wl.bench_target(1 << 20) == (8 << 44) - 1


# ----------------------------------------------------------------------------- nvcc / ptxas
def _ptxas(path, tmp_path, out_name: str) -> str:
    proc = subprocess.run(
        ["nvcc", "-arch=sm_90", "-cubin", "-Xptxas", "-v", "-o", str(tmp_path / out_name), str(path)],
        capture_output=True, text=True, cwd=tmp_path,
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stderr + proc.stdout


def _parse(report: str) -> list[tuple[int, int, int]]:
    """(registers, spill store bytes, stack bytes) per compiled entry function."""
    regs = [int(x) for x in re.findall(r"Used (\d+) registers", report)]
    spills = [int(x) for x in re.findall(r"(\d+) bytes spill stores", report)]
    stacks = [int(x) for x in re.findall(r"(\d+) bytes stack frame", report)]
    assert regs and len(regs) == len(spills) == len(stacks), report
    return list(zip(regs, spills, stacks))


@pytest.mark.nvcc
@pytest.mark.parametrize("name", NAMES)
def test_kernel_compiles_for_sm90(name, tmp_path):
    report = _ptxas(wl.kernel_file(name), tmp_path, f"{name}.cubin")
    assert f"{name}_search" in report
    ((regs, spill, stack),) = _parse(report)
    print(f"{name}: {regs} registers, {spill} bytes spill stores, {stack} bytes stack")
    assert 16 <= regs <= 255
    assert spill <= MAX_SPILL_BYTES


@pytest.mark.nvcc
def test_all_four_in_one_translation_unit(tmp_path):
    # the prefixes keep any two (here all four) files free of clashes in one file
    both = tmp_path / "all4.cu"
    both.write_text("\n".join(_source(n) for n in NAMES))
    entries = _parse(_ptxas(both, tmp_path, "all4.cubin"))
    assert len(entries) == 4


# ----------------------------------------------------------------------------- host emulation
HARNESS = r"""
// Host emulation of the crypto kernels (test only): CUDA keywords become C++.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>
#define __global__
#define __device__
#define __forceinline__ inline
#define __constant__ static
struct hf_dim3 { unsigned x, y, z; };
static hf_dim3 threadIdx, blockIdx, blockDim, gridDim;
static unsigned atomicAdd(unsigned* p, unsigned v) { unsigned o = *p; *p += v; return o; }
struct uint4 { unsigned x, y, z, w; };
static uint4 __ldg(const uint4* p) { return *p; }
@SOURCES@
static std::vector<unsigned char> slurp(const char* path) {
    std::vector<unsigned char> v;
    FILE* f = fopen(path, "rb");
    if (!f) exit(1);
    fseek(f, 0, SEEK_END); long n = ftell(f); fseek(f, 0, SEEK_SET);
    v.resize(n);
    if (n && fread(v.data(), 1, n, f) != (size_t)n) exit(2);
    fclose(f);
    return v;
}
int main(int argc, char** argv) {
    // name header.bin start num target grid max_found record out.bin [dag.bin]
    std::string name = argv[1];
    std::vector<unsigned char> hb = slurp(argv[2]);
    unsigned long long start = strtoull(argv[3], 0, 0), num = strtoull(argv[4], 0, 0);
    unsigned long long target = strtoull(argv[5], 0, 0);
    unsigned grid = (unsigned)atoi(argv[6]), max_found = (unsigned)atoi(argv[7]);
    bool record = atoi(argv[8]) != 0;
    std::vector<unsigned> header(hb.size() / 4);
    memcpy(header.data(), hb.data(), hb.size());
    std::vector<unsigned char> dag;
    if (argc > 10) dag = slurp(argv[10]);
    std::vector<unsigned long long> hashes(num, 0), found(max_found, ~0ull);
    unsigned count = 0;
    blockDim = {128, 1, 1};
    gridDim = {grid, 1, 1};
    for (unsigned b = 0; b < grid; ++b)
        for (unsigned t = 0; t < 128; ++t) {
            blockIdx = {b, 0, 0};
            threadIdx = {t, 0, 0};
            unsigned long long* hp = record ? hashes.data() : nullptr;
            if (name == "sha256")
                sha256_search(header.data(), start, num, target, hp, &count, found.data(), max_found);
            else if (name == "blake256")
                blake256_search(header.data(), start, num, target, hp, &count, found.data(), max_found);
            else if (name == "blake2b")
                blake2b_search(header.data(), start, num, target, hp, &count, found.data(), max_found);
            else
                ethash_search(header.data(), start, num, target, hp, &count, found.data(), max_found,
                              (const uint4*)dag.data(), (unsigned)(dag.size() / 128));
        }
    FILE* f = fopen(argv[9], "wb");
    fwrite(&count, 4, 1, f);
    fwrite(hashes.data(), 8, num, f);
    fwrite(found.data(), 8, max_found, f);
    fclose(f);
    return 0;
}
"""


@pytest.fixture(scope="module")
def harness(tmp_path_factory):
    cxx = shutil.which("g++") or shutil.which("clang++")
    if cxx is None:
        pytest.skip("no host C++ compiler for the kernel emulation")
    d = tmp_path_factory.mktemp("crypto_emu")
    sources = "\n".join(f'#include "{wl.kernel_file(n)}"' for n in NAMES)
    (d / "harness.cpp").write_text(HARNESS.replace("@SOURCES@", sources))
    proc = subprocess.run([cxx, "-O2", "-std=c++17", "-w", "-o", str(d / "harness"), str(d / "harness.cpp")],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    return d


def _emulate(d, name, header, start, num, target, grid, max_found, record=True, dag=None):
    header.astype("<u4").tofile(d / "hdr.bin")
    cmd = [str(d / "harness"), name, str(d / "hdr.bin"), str(start), str(num), str(target), str(grid),
           str(max_found), "1" if record else "0", str(d / "out.bin")]
    if dag is not None:
        dag.astype("<u4").tofile(d / "dag.bin")
        cmd.append(str(d / "dag.bin"))
    subprocess.run(cmd, check=True, timeout=300)
    raw = (d / "out.bin").read_bytes()
    count = int(np.frombuffer(raw[:4], np.uint32)[0])
    hashes = np.frombuffer(raw[4: 4 + 8 * num], np.uint64)
    found = np.frombuffer(raw[4 + 8 * num:], np.uint64)
    return count, hashes, found


@pytest.mark.parametrize("name", NAMES)
@pytest.mark.parametrize("start, num, grid", [(0, 600, 2), ((1 << 32) - 250, 700, 3), ((1 << 64) - 5, 20, 1)])
def test_kernel_emulated_on_host_matches_reference(harness, name, start, num, grid):
    rng = np.random.default_rng(start % 1000 + num)
    header = rng.integers(0, 1 << 32, 8 if name == "ethash" else 20, dtype=np.uint32)
    dag = rng.integers(0, 1 << 32, 777 * 32, dtype=np.uint32) if name == "ethash" else None
    target = (1 << 60) - 1
    values, found = ref.search(name, header, start, num, target, dag)
    count, hashes, fbuf = _emulate(harness, name, header, start, num, target, grid, num, dag=dag)
    assert np.array_equal(hashes, values)
    assert count == len(found)
    assert np.array_equal(np.sort(fbuf[:count]), found)
    assert np.all(fbuf[count:] == wl.FOUND_SENTINEL)


@pytest.mark.parametrize("name", NAMES)
def test_kernel_emulated_without_hashes_and_max_found(harness, name):
    rng = np.random.default_rng(11)
    header = rng.integers(0, 1 << 32, 8 if name == "ethash" else 20, dtype=np.uint32)
    dag = rng.integers(0, 1 << 32, 300 * 32, dtype=np.uint32) if name == "ethash" else None
    target = (1 << 61) - 1  # 1 in 8
    _, found = ref.search(name, header, 77, 400, target, dag)
    count, hashes, fbuf = _emulate(harness, name, header, 77, 400, target, 2, 5, record=False, dag=dag)
    assert not hashes.any()  # the null hashes pointer: nothing written
    assert count == len(found) > 5
    assert set(int(x) for x in fbuf) <= set(int(x) for x in found)  # the first max_found hits
    assert len(set(int(x) for x in fbuf)) == 5
