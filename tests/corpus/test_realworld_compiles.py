"""The real-world corpus (tests/corpus/realworld): every file compiles with nvcc and its
own flags, and the manifest describes the files faithfully.

* ``test_file_compiles`` (nvcc): ``nvcc -arch=sm_90 -c FILE <flags>`` in the corpus folder,
  one test per ``.cu`` file, the flags collected from the file's manifest entries (a file
  whose kernels need none compiles with none).  The compiles of the selected files run
  two at a time in the background, so the whole module costs about half the serial time.
* the other tests need neither nvcc nor a GPU: the manifest's files exist and are all the
  ``.cu`` files of the folder, keys are unique, every kernel is a ``__global__`` function
  of its file (in the namespaces its name says), flags are well formed and the same for
  a file's kernels, the styles the corpus stands for are all covered, and every maker,
  run with NumPy standing in for CuPy, returns arguments that match the kernel's
  parameters (count, pointer or scalar, element type), valid outputs, the symbols the
  entry declares, and the same data for the same seed.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import types
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import numpy as np
import pytest

from corpus.cases import Launch
from corpus.realworld import manifest as M
from hfuse.frontend.parse import split_template_args
from hfuse.spec import Dim3

ROOT = M.ROOT
CU_FILES = sorted(p.relative_to(ROOT).as_posix() for p in ROOT.rglob("*.cu"))
MAX_WORKERS = 2  # the test machine's cores are shared

# The styles the corpus must cover: each tag must appear in some entry's constructs.
REQUIRED_STYLES: dict[str, tuple[str, ...]] = {
    "1 sample programs": ("sample_main", "host_code", "helper_header", "std_headers", "memcpy_to_symbol"),
    "2 benchmark suites": ("include_guard", "define_from_cmdline", "ifdef_kernel", "define_comment", "macro_in_body",
                           "grid_stride_macro", "register_keyword", "duplicate_struct", "default_arg"),
    "3 library headers": ("library_header", "namespace", "template_kernel", "header_helper_sync",
                          "shared_memory_wrapper", "anonymous_namespace", "using_namespace",
                          "same_name_kernel_helper"),
    "4 globals": ("constant_table", "device_global"),
    "5 blocks": ("block_120", "block_192", "block_2d", "block_in_comment", "block_in_define"),
    "6 cooperative groups": ("cg_alias", "cg_alias_g", "cg_spelled_out", "cg_using_namespace",
                             "cg_tile_with_syncthreads"),
    "7 device constructs": ("pragma_unroll", "restrict", "ldg", "half", "cub_warp", "cub_block", "warp_shuffle",
                            "warp_vote", "early_return", "early_return_loop"),
}


# --------------------------------------------------------------------------- source parsing
_COMMENT_RE = re.compile(r"//[^\n]*|/\*.*?\*/", re.S)


def _source(file: str) -> str:
    """The file without comments."""
    return _COMMENT_RE.sub(" ", (ROOT / file).read_text())


def _matching_paren(text: str, open_at: int) -> int:
    depth = 0
    for i in range(open_at, len(text)):
        if text[i] == "(":
            depth += 1
        elif text[i] == ")":
            depth -= 1
            if depth == 0:
                return i
    raise ValueError("unbalanced parentheses")


def kernel_definition(file: str, name: str) -> tuple[list[str], list[str]] | None:
    """(template parameter names, parameter declarations) of the ``__global__`` function
    ``name`` defined in ``file``, or None."""
    src = _source(file)
    for m in re.finditer(rf"\b{re.escape(name)}\s*\(", src):
        start = max(src.rfind(";", 0, m.start()), src.rfind("}", 0, m.start()), src.rfind("{", 0, m.start()))
        head = src[start + 1: m.start()]
        if "__global__" not in head:
            continue
        close = _matching_paren(src, m.end() - 1)
        if not src[close + 1:].lstrip().startswith("{"):
            continue  # a declaration, not the definition
        params = split_template_args(src[m.end(): close])
        tmpl = re.search(r"template\s*<([^>]*)>\s*__global__", head)
        names = []
        if tmpl:
            for p in split_template_args(tmpl.group(1)):
                names.append(re.findall(r"[A-Za-z_]\w*", p)[-1])
        return names, params
    return None


_QUALIFIERS = {"const", "__restrict__", "volatile", "struct"}
_SCALARS = {
    "int": np.int32, "unsigned int": np.uint32, "unsigned": np.uint32, "uint": np.uint32, "uint32_t": np.uint32,
    "float": np.float32, "double": np.float64, "__half": np.float16, "bool": np.bool_,
}
_ELEMENTS = {
    **_SCALARS, "unsigned char": np.uint8, "float2": np.float32, "float4": np.float32, "__half2": np.float16,
    "Point3": np.float32, "LatLong": np.float32, "Node": np.int32,
}


def parse_param(decl: str, template: dict[str, str]) -> tuple[bool, bool, str]:
    """(is pointer, is const data, C type name with template parameters substituted)."""
    decl = decl.split("=", 1)[0]
    pointer = "*" in decl
    const_data = pointer and "const" in decl.split("*", 1)[0]
    words = [w for w in re.findall(r"[A-Za-z_]\w*", decl) if w not in _QUALIFIERS]
    type_words = [template.get(w, w) for w in words[:-1]]  # the last word is the parameter name
    return pointer, const_data, " ".join(type_words)


# --------------------------------------------------------------------------- nvcc
def _compile(file: str, out_dir: Path) -> subprocess.CompletedProcess:
    obj = out_dir / (file.replace("/", "_") + ".o")
    cmd = ["nvcc", "-arch=sm_90", "-c", file, "-o", str(obj), *M.flags_of(file)]
    return subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=600)


@pytest.fixture(scope="module")
def compiles(request, tmp_path_factory):
    """Futures of the compiles of every selected file, two running at a time."""
    out_dir = tmp_path_factory.mktemp("realworld_obj")
    selected = [
        item.callspec.params["cu_file"]
        for item in request.session.items
        if getattr(item, "callspec", None) is not None and "cu_file" in item.callspec.params
        and not item.get_closest_marker("skip")
    ]
    pool = ThreadPoolExecutor(max_workers=MAX_WORKERS)
    futures: dict[str, Future] = {f: pool.submit(_compile, f, out_dir) for f in dict.fromkeys(selected)}

    def get(file: str) -> subprocess.CompletedProcess:
        if file not in futures:
            futures[file] = pool.submit(_compile, file, out_dir)
        return futures[file].result()

    yield get
    pool.shutdown(wait=True, cancel_futures=True)


@pytest.mark.nvcc
@pytest.mark.parametrize("cu_file", M.FILES, ids=M.FILES)
def test_file_compiles(cu_file: str, compiles) -> None:
    assert shutil.which("nvcc"), "nvcc is not on PATH"
    res = compiles(cu_file)
    flags = " ".join(M.flags_of(cu_file))
    assert res.returncode == 0, f"nvcc -arch=sm_90 -c {cu_file} {flags} failed:\n{res.stdout}\n{res.stderr}"


# --------------------------------------------------------------------------- the manifest
def test_corpus_size_and_files() -> None:
    assert len(M.FILES) >= 30
    assert len(CU_FILES) >= 32
    missing = [f for f in M.FILES if not (ROOT / f).is_file()]
    assert not missing, f"manifest names files that do not exist: {missing}"
    unlisted = sorted(set(CU_FILES) - set(M.FILES))
    assert not unlisted, f".cu files without a manifest entry: {unlisted}"


def test_keys_unique() -> None:
    keys = [k.key for k in M.ENTRIES]
    dupes = sorted({k for k in keys if keys.count(k) > 1})
    assert not dupes, f"duplicate keys: {dupes}"
    assert len(M.KERNELS) == len(M.ENTRIES)
    instances = [(k.file, k.kernel, k.template_args) for k in M.ENTRIES]
    assert len(set(instances)) == len(instances), "two entries for the same kernel instance"


@pytest.mark.parametrize("key", list(M.KERNELS), ids=list(M.KERNELS))
def test_kernel_is_defined_in_its_file(key: str) -> None:
    k = M.KERNELS[key]
    text = (ROOT / k.file).read_text()
    assert re.search(rf"\b{re.escape(k.short_name)}\b", text), f"{k.kernel} does not appear in {k.file}"
    found = kernel_definition(k.file, k.short_name)
    assert found is not None, f"no __global__ definition of {k.short_name} in {k.file}"
    tmpl_names, _ = found
    assert len(tmpl_names) == len(k.template_args), f"{k.kernel}: template args {k.template_args} vs {tmpl_names}"
    assert ("template_kernel" in k.constructs) == bool(k.template_args)
    src = _source(k.file)
    for ns in k.kernel.split("::")[:-1]:
        assert re.search(rf"\bnamespace\s+{re.escape(ns)}\s*\{{", src), f"{k.file} has no namespace {ns}"
    assert 1 <= k.block.size <= 1024


def test_flags_well_formed_and_per_file() -> None:
    for file in M.FILES:
        flag_sets = {k.flags for k in M.kernels_of(file)}
        assert len(flag_sets) == 1, f"{file}: its kernels disagree on flags {flag_sets}"
        for f in M.flags_of(file):
            if f.startswith("-I"):
                assert (ROOT / f[2:]).is_dir(), f"{file}: {f} is not a folder of the corpus"
            elif f.startswith("-D"):
                assert re.fullmatch(r"-D[A-Za-z_]\w*(=\S+)?", f), f
            else:
                assert re.fullmatch(r"-std=c\+\+(11|14|17|20)", f), f"{file}: unexpected flag {f}"


def test_constructs_vocabulary_and_flags_they_imply() -> None:
    for k in M.ENTRIES:
        unknown = set(k.constructs) - set(M.CONSTRUCTS)
        assert not unknown, f"{k.key}: tags not in manifest.CONSTRUCTS: {sorted(unknown)}"
        if "register_keyword" in k.constructs:
            assert "-std=c++14" in k.flags, k.key
            assert re.search(r"\bregister\b", _source(k.file)), k.key
        if {"define_from_cmdline", "ifdef_kernel"} & set(k.constructs):
            assert any(f.startswith("-D") for f in k.flags), k.key
        if "helper_header" in k.constructs:
            assert "-Icommon/inc" in k.flags, k.key
        if "library_header" in k.constructs:
            assert "-Iinclude" in k.flags, k.key


@pytest.mark.parametrize("style", list(REQUIRED_STYLES))
def test_style_is_covered(style: str) -> None:
    used = {t for k in M.ENTRIES for t in k.constructs}
    missing = [t for t in REQUIRED_STYLES[style] if t not in used]
    assert not missing, f"style {style}: no entry exercises {missing}"


def test_globals_are_declared_and_filled() -> None:
    declared_re = re.compile(r"__(?:constant|device)__\s+(?:__device__\s+)?[\w:]+(?:\s+\w+)*?\s+(\w+)\s*(?:\[|=|;)")
    filled: dict[str, set[str]] = {}
    for k in M.ENTRIES:
        filled.setdefault(k.file, set()).update(k.constant_symbols)
        src = _source(k.file)
        for sym in k.constant_symbols:
            assert sym in declared_re.findall(src), f"{k.key}: {sym} is no __constant__/__device__ global of {k.file}"
            assert re.search(rf"\b{sym}\b", src.split("__global__", 1)[1]), f"{k.key}: {sym} is never used"
    for file in M.FILES:
        globals_ = set(declared_re.findall(_source(file)))
        assert globals_ <= filled.get(file, set()), f"{file}: globals no entry fills: {globals_ - filled.get(file, set())}"


# --------------------------------------------------------------------------- the makers, on NumPy
_NUMPY_AS_CUPY = types.SimpleNamespace(asarray=lambda a: np.array(a, copy=True))


def _run_maker(k: M.RealKernel, seed: int) -> M.RealLaunch:
    return k.make(np.random.default_rng(seed), _NUMPY_AS_CUPY, k.block)


@pytest.mark.parametrize("key", list(M.KERNELS), ids=list(M.KERNELS))
def test_maker_matches_kernel(key: str) -> None:
    k = M.KERNELS[key]
    launch = _run_maker(k, 1234)
    assert isinstance(launch, M.RealLaunch) and isinstance(launch, Launch)
    assert isinstance(launch.grid, Dim3) and launch.grid.size >= 1
    assert launch.grid.x < 2**31 and launch.grid.y < 65536 and launch.grid.z < 65536
    assert 0 <= launch.smem <= 48 * 1024

    tmpl_names, params = kernel_definition(k.file, k.short_name)
    template = dict(zip(tmpl_names, k.template_args))
    assert len(launch.args) == len(params), f"{key}: {len(launch.args)} arguments for {len(params)} parameters"
    for i, (arg, decl) in enumerate(zip(launch.args, params)):
        pointer, const_data, ctype = parse_param(decl, template)
        if pointer:
            assert isinstance(arg, np.ndarray), f"{key}: argument {i} ({decl}) should be an array"
            assert arg.size > 0
            if ctype in _ELEMENTS:
                assert arg.dtype == _ELEMENTS[ctype], f"{key}: argument {i} ({decl}) is {arg.dtype}"
        else:
            assert isinstance(arg, np.generic), f"{key}: argument {i} ({decl}) should be a NumPy scalar"
            if ctype in _SCALARS:
                assert arg.dtype == _SCALARS[ctype], f"{key}: argument {i} ({decl}) is {arg.dtype}"
        if i in launch.outputs:
            assert pointer and not const_data, f"{key}: output {i} ({decl}) is not a writable pointer"
    assert launch.outputs and len(set(launch.outputs)) == len(launch.outputs)
    assert all(0 <= o < len(launch.args) for o in launch.outputs)

    assert set(launch.symbols) == set(k.constant_symbols), f"{key}: symbols {sorted(launch.symbols)}"
    for name, data in launch.symbols.items():
        assert isinstance(data, np.ndarray) and data.size > 0, f"{key}: symbol {name}"


@pytest.mark.parametrize("key", list(M.KERNELS), ids=list(M.KERNELS))
def test_maker_is_deterministic(key: str) -> None:
    k = M.KERNELS[key]
    a, b = _run_maker(k, 99), _run_maker(k, 99)
    assert a.grid == b.grid and a.smem == b.smem and a.outputs == b.outputs
    for x, y in zip(a.args, b.args):
        if isinstance(x, np.ndarray):
            assert x.dtype == y.dtype and np.array_equal(x, y, equal_nan=True)
        else:
            assert x == y
    assert a.symbols.keys() == b.symbols.keys()
    for name in a.symbols:
        assert np.array_equal(a.symbols[name], b.symbols[name])
