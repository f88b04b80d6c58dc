"""nvcc's -I/-D/-U/-include/-std: on the command line, in a config, and end to end.

The scenario of the issue: a file in an include guard, a kernel under ``#ifdef USE_K``
sized by ``-DBLOCK``, a loop macro and a helper in a header only ``-I`` reaches, and a
``register`` variable that only ``-std=c++14`` accepts.
"""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest

from hfuse.cli import build_parser, main, options_from_flags
from hfuse.config import load_config
from hfuse.errors import HFuseError
from hfuse.frontend.options import CompileOptions, Define


def parse(*argv: str) -> CompileOptions:
    return options_from_flags(build_parser().parse_args(list(argv)))


def test_fuse_takes_nvcc_spellings():
    args = build_parser().parse_args(
        ["fuse", "a.cu", "-I", "inc", "-Ilib/include", "-DBLOCK=16", "-D", "USE_K", "-UNDEBUG",
         "-include", "pre.h", "-std=c++14", "-k", "relu:256", "-k", "smooth:128"])
    assert args.files == ["a.cu"] and args.kernel == ["relu:256", "smooth:128"]
    assert options_from_flags(args) == CompileOptions(
        include_dirs=(Path("inc"), Path("lib/include")),
        defines=(Define("BLOCK", "16"), Define("USE_K", "1")),  # -D NAME means NAME=1, as for nvcc
        undefines=("NDEBUG",),
        pre_includes=(Path("pre.h"),),
        std="c++14",
    )


def test_minus_include_is_not_minus_I():
    """``-include pre.h`` is its own option; ``-Iinclude`` is the folder ``include``."""
    assert parse("fuse", "a.cu", "-include", "pre.h").pre_includes == (Path("pre.h"),)
    assert parse("fuse", "a.cu", "-include", "pre.h").include_dirs == ()
    assert parse("fuse", "a.cu", "-Iinclude").include_dirs == (Path("include"),)


def test_minus_isystem_is_an_installed_librarys_folder():
    options = parse("fuse", "a.cu", "-isystem", "/opt/lib/include", "-Iinc", "-isystem", "other")
    assert options.system_include_dirs == (Path("/opt/lib/include"), Path("other")) and options.include_dirs == (Path("inc"),)
    assert parse("tune", "t.yaml", "-isystem", "x").system_include_dirs == (Path("x"),)


def test_fuse_takes_the_device_pass_arch_and_tune_does_not():
    assert parse("fuse", "a.cu", "-arch=sm_80").cuda_arch == 800
    assert parse("tune", "t.yaml", "-Iinc", "-std", "c++20") == CompileOptions(include_dirs=["inc"], std="c++20")
    with pytest.raises(SystemExit):
        build_parser().parse_args(["tune", "t.yaml", "-arch=sm_80"])  # the tuner's device pass is the GPU's


def test_bad_std_is_refused_by_the_parser():
    with pytest.raises(SystemExit):
        build_parser().parse_args(["fuse", "a.cu", "-std=c++98"])


CONFIG = """kernels:
  - {file: src/a.cu, name: relu, block: 256}
  - {file: src/b.cu, name: smooth, block: 128}
compile:
  include_dirs: [include]
  defines: [USE_K, BLOCK=128]
  undefines: NDEBUG
  pre_includes: [pre.h]
  std: c++14
"""


def test_config_compile_section_paths_are_relative_to_the_config(tmp_path):
    (tmp_path / "fuse.yaml").write_text(CONFIG)
    options = load_config(tmp_path / "fuse.yaml").options
    assert options == CompileOptions(include_dirs=[tmp_path / "include"], defines=["USE_K", "BLOCK=128"],
                                     undefines=["NDEBUG"], pre_includes=[tmp_path / "pre.h"], std="c++14")


def test_command_line_flags_add_to_and_override_the_config(tmp_path):
    (tmp_path / "fuse.yaml").write_text(CONFIG)
    args = build_parser().parse_args(["fuse", "-c", str(tmp_path / "fuse.yaml"), "-I", "mine", "-DBLOCK=64", "-std=c++17"])
    options = options_from_flags(args, load_config(tmp_path / "fuse.yaml").options)
    assert options.include_dirs == (Path("mine"), tmp_path / "include")  # a -I on the command line is searched first
    assert options.defines[-1] == Define("BLOCK", "64")  # the later -D wins, as with nvcc
    assert options.std == "c++17"


@pytest.mark.parametrize("section, message", [
    ("compile: {include_dir: [inc]}", "unknown compile options: include_dir"),
    ("compile: [include]", "'compile' must be a mapping"),
    ("compile: {std: c++98}", "-std=c++98 is not one of"),
])
def test_a_bad_compile_section_is_a_clear_error(tmp_path, section, message):
    (tmp_path / "fuse.yaml").write_text("kernels:\n  - {file: a.cu, name: a, block: 32}\n" + section + "\n")
    with pytest.raises(HFuseError, match=re.escape(message)) as err:
        load_config(tmp_path / "fuse.yaml")
    assert err.value.where.file == tmp_path / "fuse.yaml"


COMMON = """#ifndef COMMON_CUH
#define COMMON_CUH
#define HALO 1 // halo width
#define GRID_LOOP(i, n) for (int i = blockIdx.x * blockDim.x + threadIdx.x; i < (n); i += blockDim.x * gridDim.x)
__device__ inline float clampf(float v) { return v < 0.f ? 0.f : v; }
#endif
"""

RELU = """#ifndef RELU_CU
#define RELU_CU
#include "common.cuh"
__global__ void relu(float* a, int n) {
  register int h = HALO;
  GRID_LOOP(i, n) { a[i] = clampf(a[i]) * h; }
}
#endif
"""

SMOOTH = """#include <common.cuh>
#ifdef USE_K
__global__ void smooth(const float* in, float* out, int n) {
  __shared__ float s[BLOCK + 2 * HALO];
  int i = blockIdx.x * BLOCK + threadIdx.x;
  s[threadIdx.x + HALO] = i < n ? in[i] : 0.f;
  __syncthreads();
  if (i < n) out[i] = clampf(s[threadIdx.x] + s[threadIdx.x + 2 * HALO]);
}
#endif
"""


@pytest.mark.nvcc
def test_hfuse_fuse_with_nvcc_flags_end_to_end(tmp_path, monkeypatch):
    for name, text in {"relu.cu": RELU, "smooth.cu": SMOOTH, "inc/common.cuh": COMMON}.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(text)
    monkeypatch.chdir(tmp_path)
    flags = ["-I", "inc", "-DUSE_K", "-DBLOCK=128", "-std=c++14"]
    assert main(["fuse", "relu.cu", "smooth.cu", *flags, "-k", "relu:256", "-k", "smooth:128", "-o", "out/f.cu"]) == 0
    fused = (tmp_path / "out/f.cu").read_text()
    assert fused.count("float clampf(float v)") == 1  # the header's helper, read and emitted once
    # the header's HALO stays as written (defined around the code using it); -DBLOCK is the command
    # line's, expanded; GRID_LOOP reads the grid, which the part sees as its own: expanded, rewritten
    assert "s[128 + 2 * HALO]" in fused and "#define HALO 1\n" in fused and "GRID_LOOP" not in fused
    assert "Compile it with -std=c++17 (NVRTC too): the originals were read as -std=c++14" in fused
    nvcc = subprocess.run([shutil.which("nvcc"), "-std=c++14", "-arch=sm_90", "-c", "out/f.cu", "-o", "f.o"],
                          capture_output=True, text=True)
    assert nvcc.returncode == 0, nvcc.stderr
    # Without -DUSE_K the kernel is not there, as for nvcc.
    assert main(["fuse", "relu.cu", "smooth.cu", "-I", "inc", "-DBLOCK=128", "-k", "relu:256", "-k", "smooth:128",
                 "-o", "out/g.cu"]) == 2


def test_files_built_with_other_flags_share_what_one_compile_of_the_fused_file_needs():
    a = CompileOptions.from_flags(include_dirs=["inc"], defines=["SCALE=2", "NDEBUG"], std="c++17", arch="sm_90",
                                  language_flags=["--use_fast_math"])
    b = CompileOptions.from_flags(include_dirs=["inc", "more"], defines=["SCALE=3", "NDEBUG"], std="c++20",
                                  arch="sm_80", system_include_dirs=["/opt/lib"],
                                  language_flags=["--expt-relaxed-constexpr"])
    shared, notes = CompileOptions.shared([a, b])
    assert shared.include_dirs == (Path("inc"), Path("more")) and shared.system_include_dirs == (Path("/opt/lib"),)
    assert shared.defines == (Define("NDEBUG"),)  # what both agree on
    assert shared.std == "c++20" and shared.arch == "sm_90"
    assert shared.language_flags == ("--use_fast_math", "--expt-relaxed-constexpr")
    assert notes == ("the builds do not agree on -D SCALE: the fused file's kept headers see none of them (each "
                     "file's own uses were expanded with its own)", "the builds are for sm_80, sm_90: the fused file "
                     "is for sm_90")
    assert CompileOptions.shared([a, a]) == (a, ())
