"""The command line's own behaviour: one name for the layout, its old name, the version."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path
import sys

import pytest

from hfuse import __version__
from hfuse.cli import main

from corpus import cases as C

VEC = str(C.CORPUS / "vec_scale.cu")
REDUCE = str(C.CORPUS / "block_reduce.cu")


def _fuse(tmp_path, *flags):
    return main(["fuse", VEC, REDUCE, "-k", "vec_scale:128", "-k", "block_reduce:256", "-o", str(tmp_path / "f.cu"),
                 *flags])


def test_version(capsys):
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.strip() == f"hfuse {__version__}"


def test_layout_is_the_flag(tmp_path, capsys):
    assert _fuse(tmp_path, "--layout", "vertical") == 0
    err = capsys.readouterr().err
    assert "vertical fusion" in err and "note:" not in err


def test_strategy_is_read_as_layout_with_a_note(tmp_path, capsys):
    assert _fuse(tmp_path, "--strategy", "vertical") == 0
    err = capsys.readouterr().err
    assert "vertical fusion" in err and "--strategy is the old name of --layout" in err


def test_both_names_at_once_are_refused(tmp_path, capsys):
    assert _fuse(tmp_path, "--strategy", "vertical", "--layout", "horizontal") == 2
    assert "give --layout only" in capsys.readouterr().err


def test_a_configs_strategy_key_is_read_as_layout_with_a_note(tmp_path, capsys):
    config = tmp_path / "c.yaml"
    config.write_text(f"output: {tmp_path / 'o.cu'}\nstrategy: vertical\nkernels:\n"
                      f"  - {{file: {VEC}, name: vec_scale, block: 128}}\n"
                      f"  - {{file: {REDUCE}, name: block_reduce, block: 256}}\n")
    assert main(["fuse", "-c", str(config)]) == 0
    err = capsys.readouterr().err
    assert "'strategy:' is the old name of 'layout:'" in err and "vertical fusion" in err


def test_fuse_does_not_import_the_tuner_or_the_benchmark_suite(tmp_path):
    code = (f"import sys; from hfuse.cli import main; rc = main({['fuse', VEC, REDUCE, '-k', 'vec_scale:128', '-k', 'block_reduce:256', '-o', str(tmp_path / 'f.cu')]!r}); "
            "bad = sorted(m for m in sys.modules if m.startswith(('hfuse.tuning', 'hfuse.bench'))); print(bad); sys.exit(rc)")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


@pytest.mark.parametrize("command", [[], ["fuse"], ["tune"], ["check"], ["bench"]])
def test_every_help_page_prints(command, capsys):
    """argparse formats help text with '%': one unescaped '%' in a description broke ``hfuse fuse --help``."""
    with pytest.raises(SystemExit) as done:
        main([*command, "--help"])
    assert done.value.code == 0 and "usage: hfuse" in capsys.readouterr().out


@pytest.mark.parametrize("unit", [
    '#include "kern.cuh"\n',                                                      # in a header the file includes
    "#define DEFINE_K(n) __global__ void n(float* x) { x[threadIdx.x] = 1.f; }\nDEFINE_K(hdr_kernel)\n",  # by a macro
])
def test_a_kernel_no_file_spells_is_found_where_it_is_defined(tmp_path, capsys, unit):
    # once: "no file defines a kernel named 'hdr_kernel'": the name was looked for in the files' text only
    (tmp_path / "kern.cuh").write_text("#pragma once\n__global__ void hdr_kernel(float* x) { x[threadIdx.x] *= 2.f; }\n")
    (tmp_path / "unit.cu").write_text(unit)
    assert main(["fuse", str(tmp_path / "unit.cu"), VEC, "-k", "hdr_kernel:128", "-k", "vec_scale:128",
                 "-o", str(tmp_path / "f.cu")]) == 0
    assert "part 1: hdr_kernel" in capsys.readouterr().err


def test_a_kernel_no_file_defines_is_named_with_the_kernels_they_write(tmp_path, capsys):
    (tmp_path / "unit.cu").write_text("template <int N>\n__global__ void __launch_bounds__(256) dequantize_kernel("
                                      "float* x) { x[threadIdx.x] = N; }\n")
    assert main(["fuse", str(tmp_path / "unit.cu"), VEC, "-k", "dequantize_krnel:128", "-k", "vec_scale:128",
                 "-o", str(tmp_path / "f.cu")]) != 0
    err = capsys.readouterr().err
    assert "no file defines a kernel named 'dequantize_krnel'" in err
    assert "kernels they define: dequantize_kernel (unit.cu), vec_scale (" in err
    assert "did you mean 'dequantize_kernel'?" in err


def test_a_kernels_file_may_be_named_by_the_name_of_a_file_given(tmp_path, capsys, monkeypatch):
    # once: "-k norm.cu:k:64" with src/norm.cu among the files read ./norm.cu ("cannot read the source file")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "norm.cu").write_text("__global__ void k(float* x) { x[threadIdx.x] = 1.f; }\n")
    monkeypatch.chdir(tmp_path)
    assert main(["fuse", "src/norm.cu", VEC, "-k", "norm.cu:k:64", "-k", "vec_scale:128", "-o", "f.cu"]) == 0
    assert "part 1: k" in capsys.readouterr().err
    # a path that is not there and no file of that name: the file is named in the error
    assert main(["fuse", "src/norm.cu", VEC, "-k", "other.cu:k:64", "-k", "vec_scale:128", "-o", "f.cu"]) != 0
    assert "other.cu: cannot read the source file" in capsys.readouterr().err


@pytest.mark.nvcc
def test_the_builds_language_flags_reach_the_compile_check_and_the_header(tmp_path, capsys):
    # a kernel calling std::max compiles only with --expt-relaxed-constexpr, as in its own build
    source = tmp_path / "k.cu"
    source.write_text("#include <algorithm>\n__global__ void k(const float* x, float* y) {\n"
                      "  y[threadIdx.x] = std::max(x[threadIdx.x], 0.f);\n}\n")
    out = tmp_path / "f.cu"
    args = ["fuse", str(source), VEC, "-k", "k:64", "-k", "vec_scale:128", "-o", str(out), "--check"]
    assert main(args) != 0
    assert "if your build gives it nvcc, give it hfuse too (hfuse fuse ... --expt-relaxed-constexpr)" in \
        capsys.readouterr().err
    assert main([*args, "-expt-relaxed-constexpr"]) == 0
    assert "can launch" in capsys.readouterr().err
    assert "language flags: --expt-relaxed-constexpr" in out.read_text()


def test_a_kernel_is_picked_by_the_line_of_its_definition(tmp_path, capsys):
    # kernels of one name that differ only in their parameters: NAME@LINE says which
    from hfuse.config import load_config

    source = tmp_path / "two.cu"
    source.write_text("__global__ void fill(float* x) { x[threadIdx.x] = 1.f; }\n"
                      "__global__ void fill(float* x, float v) { x[threadIdx.x] = v; }\n")
    assert main(["fuse", str(source), VEC, "-k", "fill@2:128", "-k", "vec_scale:128", "-o", str(tmp_path / "f.cu")]) == 0
    assert "x[hf_ctx.threadIdx.x] = v;" in (tmp_path / "f.cu").read_text()
    config = tmp_path / "fuse.yaml"
    config.write_text(f"kernels:\n  - {{file: two.cu, name: fill, block: 128, line: 1}}\n"
                      f"  - {{file: {VEC}, name: vec_scale, block: 128}}\n")
    assert load_config(config).kernels[0].line == 1
    config.write_text(config.read_text().replace("line: 1", "line: first"))
    assert main(["fuse", "-c", str(config), "-o", str(tmp_path / "g.cu")]) != 0
    assert "'line' is the line its definition starts on, a positive integer" in capsys.readouterr().err


BUILD_LINE = ["-O3", "-Xcompiler", "-fPIC", "-lineinfo", "--use_fast_math", "-Xptxas=-v", "-diag-suppress", "177",
              "--threads", "4", "-ccbin", "g++", "-gencode", "arch=compute_80,code=sm_80", "-MD", "-MF", "k.d",
              "--define-macro", "TILE=8", "--std=c++17", "-Wno-deprecated-gpu-targets", "-x", "cu",
              "-Xcudafe", "--diag_suppress=cc_clobber_ignored", "--cudart", "shared"]
"""A build's nvcc command line as CMake or setup.py writes it, pasted whole."""


def test_a_builds_whole_nvcc_command_line_is_taken_and_what_does_not_matter_is_named(tmp_path, capsys):
    assert _fuse(tmp_path, *BUILD_LINE) == 0
    err = capsys.readouterr().err
    assert "nvcc flags left out" in err
    for left_out in ("-O3", "-Xcompiler -fPIC", "-lineinfo", "-Xptxas -v", "-diag-suppress 177", "-ccbin g++",
                     "-gencode arch=compute_80,code=sm_80", "-MF k.d", "-Wno-deprecated-gpu-targets",
                     "-Xcudafe --diag_suppress=cc_clobber_ignored", "--cudart shared"):
        assert left_out in err
    assert "--use_fast_math" not in err.split("left out")[1].splitlines()[0]  # (it changes results: kept)


def test_the_long_spellings_and_gencode_mean_what_the_short_ones_do():
    from hfuse.cli import build_parser, options_from_flags

    args = build_parser().parse_args(["fuse", "a.cu", "--include-path", "inc", "--define-macro", "N=2",
                                      "--undefine-macro", "M", "--system-include", "lib", "--std", "c++20",
                                      "-gencode=arch=compute_90a,code=[sm_90a,compute_90a]"])
    options = options_from_flags(args)
    assert (options.include_dirs, [str(d) for d in options.defines], options.undefines) == ((Path("inc"),), ["N=2"], ("M",))
    assert options.system_include_dirs == (Path("lib"),) and options.std == "c++20" and options.arch == "sm_90a"
    given = build_parser().parse_args(["fuse", "a.cu", "-arch=sm_80", "-gencode", "arch=compute_90,code=sm_90"])
    assert options_from_flags(given).arch == "sm_80"  # -arch says it first


def test_a_flag_nvcc_does_not_have_is_still_refused(tmp_path, capsys):
    with pytest.raises(SystemExit):
        _fuse(tmp_path, "--no-such-flag")
    assert "unrecognized arguments: --no-such-flag" in capsys.readouterr().err


def _project_with_a_build(tmp_path):
    """Two files built with their own -D and a relative -I, as a CMake build's database lists them."""
    (tmp_path / "include").mkdir()
    (tmp_path / "src").mkdir()
    (tmp_path / "build").mkdir()
    (tmp_path / "include" / "scale.cuh").write_text(
        "#pragma once\n#ifndef SCALE\n#error \"SCALE comes from the build\"\n#endif\n"
        "__device__ inline float scaled(float v) { return SCALE * v; }\n")
    for name, extra in (("a", ""), ("b", "#include <algorithm>\n")):
        (tmp_path / "src" / f"{name}.cu").write_text(
            f"#include \"scale.cuh\"\n{extra}__global__ void k{name}(float* y, int n) {{\n"
            f"  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
            f"  if (i < n) y[i] = {'scaled(y[i]) + OFFSET' if name == 'a' else 'std::max(scaled(y[i]), 0.f)'};\n}}\n")
    build = tmp_path / "build"
    entries = [
        {"directory": str(build), "file": "../src/a.cu",
         "command": f"/usr/bin/ccache nvcc -DSCALE=2.0f -DOFFSET=1.0f -I../include -O3 -Xcompiler=-fPIC "
                    f"--generate-code=arch=compute_90,code=[compute_90,sm_90] -x cu -c {tmp_path}/src/a.cu -o a.o"},
        {"directory": str(build), "file": str(tmp_path / "src" / "b.cu"),
         "arguments": ["nvcc", "-DSCALE=3.0f", f"-I{tmp_path}/include", "--expt-relaxed-constexpr", "-std=c++20",
                       "-c", "../src/b.cu", "-o", "b.o"]},
    ]
    (build / "compile_commands.json").write_text(json.dumps(entries))
    return tmp_path


@pytest.mark.nvcc
def test_each_file_is_read_with_the_flags_of_its_own_build_command(tmp_path, capsys):
    project = _project_with_a_build(tmp_path)
    out = tmp_path / "fused.cu"
    assert main(["fuse", str(project / "src" / "a.cu"), str(project / "src" / "b.cu"), "-k", "ka:128", "-k", "kb:128",
                 "-o", str(out), "-p", str(project / "build"), "--check"]) == 0
    err = capsys.readouterr().err
    text = out.read_text()
    # each file's own -D: SCALE differs (a helper each), OFFSET is a.cu's alone; b.cu's flags reach the compile
    assert "return 2.0f * v;" in text and "return 3.0f * v;" in text and "+ 1.0f;" in text
    assert "Compile it with -std=c++20" in text and "--expt-relaxed-constexpr" in text
    assert "the builds do not agree on -D OFFSET, SCALE" in err and "can launch" in err


def test_a_file_the_build_does_not_list_is_read_with_the_command_lines_flags(tmp_path, capsys):
    project = _project_with_a_build(tmp_path)
    assert main(["fuse", str(project / "src" / "a.cu"), VEC, "-k", "ka:128", "-k", "vec_scale:128",
                 "-o", str(tmp_path / "f.cu"), "-p", str(project / "build" / "compile_commands.json")]) == 0
    assert f"note: {VEC} is not in {project / 'build' / 'compile_commands.json'}: read with the command line's flags" \
        in capsys.readouterr().err


@pytest.mark.parametrize("database, said", [
    (None, "cannot read the compile database"),
    ("[{\"file\": \"a.cu\",", "the compile database is not JSON"),
    ("{\"file\": \"a.cu\"}", "must be a JSON list of entries"),
    ("[{\"directory\": \"/tmp\", \"file\": \"a.cu\"}]", "entry #0 needs 'arguments' (a list of strings) or 'command'"),
])
def test_a_compile_database_hfuse_cannot_read_is_named(tmp_path, capsys, database, said):
    if database is not None:
        (tmp_path / "compile_commands.json").write_text(database)
    assert main(["fuse", VEC, "-k", "vec_scale:128", "-k", "vec_offset:128", "-o", str(tmp_path / "f.cu"),
                 "-p", str(tmp_path)]) == 2
    assert said in capsys.readouterr().err
