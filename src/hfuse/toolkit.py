"""Where the CUDA toolkit is: its command-line tools (ncu, compute-sanitizer, ...) and the
header folders NVRTC needs."""
from __future__ import annotations

import functools
import importlib.util
import os
import shutil
import sys
import sysconfig
from pathlib import Path
from typing import Sequence


def find_cuda_tool(name: str) -> str | None:
    """``name`` on ``PATH``, else in ``$CUDA_HOME/bin``, ``$CUDA_PATH/bin`` or ``/usr/local/cuda/bin``."""
    found = shutil.which(name)
    if found:
        return found
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"), "/usr/local/cuda"):
        if root and (Path(root) / "bin" / name).is_file():
            return str(Path(root) / "bin" / name)
    return None


def installed_package_dir(folder: Path) -> bool:
    """Whether ``folder`` lies inside an installed Python package (site- or dist-packages):
    a library's headers, not the user's code."""
    return any(part in ("site-packages", "dist-packages") for part in Path(folder).resolve().parts)


VENDORED_FOLDERS = frozenset({"third_party", "third-party", "thirdparty", "3rdparty", "3rd_party", "3rd-party",
                              "_deps", "vendor", "vendored", "external", "externals", "extern", "submodules"})
"""Folder names under which projects keep other projects' sources (git submodules, copies,
CMake's FetchContent checkouts in ``_deps``)."""


def another_projects_dir(folder: Path, inputs: Sequence[Path]) -> bool:
    """Whether the ``-I`` folder ``folder`` holds another project's headers, not those of the
    project the source files ``inputs`` belong to: inside an installed Python package, in
    another git checkout than each input's, each input being in one (a submodule such as
    ``csrc/cutlass``, a clone beside the project), or, below what it shares with each input's folder, under a
    vendoring folder (``third_party/cutlass/include``, ``build/_deps/cutlass-src/include``).
    A project's own folders stay its own wherever the project itself lies."""
    folder = Path(folder).resolve()
    if installed_package_dir(folder):
        return True
    homes = [Path(i).resolve().parent for i in inputs]
    if not homes:
        return False
    checkout = _checkout_root(folder)
    roots = [_checkout_root(home) for home in homes]
    if checkout is not None and all(root is not None and root != checkout for root in roots):
        return True  # (a file of no checkout, written beside a library to use its kernels, proves nothing)
    return all(any(part.lower() in VENDORED_FOLDERS for part in folder.relative_to(os.path.commonpath([folder, home])).parts)
               for home in homes)


def _checkout_root(folder: Path) -> Path | None:
    """The root of the git checkout ``folder`` lies in (a submodule's own), or None."""
    for candidate in (folder, *folder.parents):
        if (candidate / ".git").exists():
            return candidate
    return None


PYTORCH_EXTENSION_DEFINES = ("__CUDA_NO_HALF_OPERATORS__", "__CUDA_NO_HALF_CONVERSIONS__",
                             "__CUDA_NO_BFLOAT16_CONVERSIONS__", "__CUDA_NO_HALF2_OPERATORS__")
"""What torch.utils.cpp_extension's BuildExtension defines for every CUDAExtension's nvcc (with
``--expt-relaxed-constexpr``): without them, operators on ``c10::Half`` are ambiguous."""


@functools.cache
def pytorch_include_dirs() -> tuple[Path, ...]:
    """The folders a PyTorch extension's build adds (``torch/include``, its C++ API, and
    Python's headers, which ``torch/extension.h`` includes) when torch is installed; found
    without importing torch (a second or more)."""
    try:
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return ()
    if spec is None or not spec.origin:
        return ()
    root = Path(spec.origin).parent / "include"
    dirs = [root, root / "torch" / "csrc" / "api" / "include", Path(sysconfig.get_paths()["include"])]
    return tuple(d for d in dirs if d.is_dir()) if root.is_dir() else ()


@functools.cache
def pip_cuda_library_dirs() -> tuple[Path, ...]:
    """The header folders of CUDA's libraries installed as Python packages
    (``nvidia/cu13/include`` with cuBLAS's and cuSPARSE's headers, which a pip-installed
    torch brings and ``ATen/cuda/CUDAContext.h`` includes), beside a toolkit that may have
    none of them. Searched after the toolkit's own folder, so they only add what it lacks."""
    found: list[Path] = []
    for site in sys.path:
        nvidia = Path(site) / "nvidia"
        if nvidia.is_dir():
            found += [d for d in sorted(nvidia.glob("*/include")) if d.is_dir()]
    return tuple(dict.fromkeys(d.resolve() for d in found))


def cuda_root() -> Path | None:
    """The toolkit's folder (holding ``include/cuda_runtime.h``): ``$CUDA_HOME``,
    ``$CUDA_PATH``, the folder of ``nvcc`` on ``PATH``, or ``/usr/local/cuda``."""
    nvcc = shutil.which("nvcc")
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH"),
                 Path(nvcc).resolve().parent.parent if nvcc else None, "/usr/local/cuda"):
        if root and (Path(root) / "include" / "cuda_runtime.h").is_file():
            return Path(root).resolve()
    return None


def cuda_include_dirs(import_cupy: bool = True) -> list[str]:
    """Folders holding the CUDA headers NVRTC may need (cooperative_groups.h, ...).

    NVRTC ships only a few built-in headers. We look, in order, at $CUDA_PATH,
    $CUDA_HOME, the toolkit CuPy found, the folder of nvcc, /usr/local/cuda, and the
    pip packages that carry headers (nvidia/cu13/include, nvidia/cuda_runtime/include;
    ``curand_kernel.h`` comes from nvidia-curand where the toolkit has no cuRAND).
    ``import_cupy=False`` (the front end, which only tells toolkit headers from the user's)
    asks CuPy only if something imported it already: importing it costs a CPU-only
    ``hfuse fuse`` 0.1-1 s.
    """
    roots: list[Path] = []
    for env in ("CUDA_PATH", "CUDA_HOME"):
        if os.environ.get(env):
            roots.append(Path(os.environ[env]))
    try:
        cupy = importlib.import_module("cupy") if import_cupy else sys.modules.get("cupy")
        path = cupy.cuda.get_cuda_path() if cupy is not None else None
        if path:
            roots.append(Path(path))
    except Exception:
        pass
    if nvcc := shutil.which("nvcc"):
        roots.append(Path(nvcc).resolve().parent.parent)
    roots.append(Path("/usr/local/cuda"))
    candidates = [r / "include" for r in roots]
    for site in sys.path:
        nvidia = Path(site) / "nvidia"
        if nvidia.is_dir():
            candidates.extend(sorted(nvidia.glob("*/include")))
    found: list[str] = []
    for c in candidates:
        # pip's nvidia/cu13/include may hold only cuRAND's headers (nvidia-curand).
        if any((c / h).is_file() for h in ("cooperative_groups.h", "cuda_runtime.h", "curand_kernel.h")):
            # CUDA 13 moved libcu++ (<cuda/std/...>, used by cooperative_groups.h) to include/cccl.
            for d in (c, c / "cccl"):
                text = str(d.resolve())
                if d.is_dir() and text not in found:
                    found.append(text)
    return found
