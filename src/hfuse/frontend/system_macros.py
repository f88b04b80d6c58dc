"""The macros a system header defines, asked of the host C++ compiler.

A file that includes ``<unistd.h>`` and then tests ``#if _POSIX_VERSION >= 200112L`` (or
``<limits.h>`` then ``#ifndef UCHAR_MAX``) decides its conditionals on macros hfuse never
reads: system headers stay ``#include`` lines. nvcc preprocesses with the host compiler, so
hfuse asks the same compiler (``g++ -dM -E``) which macros the header defines, once per
header and dialect, and gives the preprocessor those the compiler itself does not predefine.
Only headers of the system's folders are asked about: the CUDA toolkit's define
``__device__`` and friends, which must stay as the device pass sees them.
"""
from __future__ import annotations

import functools
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Mapping

from ..files import default_cache_dir, write_atomically

_MACRO_LIKE = re.compile(r"^[A-Z][A-Z0-9_]*[A-Z0-9]$")
"""A name that may be a library's macro (``CUDA_KERNEL_LOOP``, ``C10_HOST_DEVICE``): only
such names make hfuse ask for the kept system headers' macros, and only such are defined
for code. Never ``__device__`` and its kind: the toolkit's, which the device pass keeps."""
_STRUCTURAL = re.compile(
    r"\b(threadIdx|blockIdx|blockDim|gridDim|__syncthreads\w*|__launch_bounds__|__global__|__device__|__host__|"
    r"__shared__|__constant__|__managed__|__restrict__|__forceinline__|__noinline__|__align__|__cluster_dims__|"
    r"__maxnreg__|__grid_constant__|extern|static|inline|constexpr|for|while|do|if|else|switch|case|return|break|"
    r"continue|goto|asm|__asm__|_Pragma|pragma|template|typename|struct|class|union|enum|namespace|using|typedef)\b")
"""What a system macro's expansion must show for hfuse to expand it in the user's code."""
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_NAME = re.compile(r"^(::\s*)?[A-Za-z_]\w*(\s*::\s*[A-Za-z_]\w*)*$")
"""A name, perhaps qualified (``x``, ``::hipcub``)."""
_DEFINE = re.compile(r"^#define (\S+?)(\([^)]*\))?(?: (.*))?$")
_NUMERIC = re.compile(r"^__(\w+_(MAX|MIN|WIDTH|EPSILON|DIG|MANT_DIG|MAX_EXP|MIN_EXP)|SIZEOF_\w+|CHAR_BIT)__$")
"""The host compiler's numeric limits (``__SCHAR_MAX__``, ``__SIZEOF_LONG__``), which system
headers' macros are written in."""


def _host_compiler() -> str | None:
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


def _defines(text: str, std: str, dirs: tuple[str, ...] = (),
             defines: tuple[tuple[str, str], ...] = (), cache: Path | None = None) -> dict[str, str] | None:
    """``name or name(params) -> value`` of every macro defined after ``text``, as the host
    compiler preprocesses it; None when there is no host compiler or ``text`` does not
    preprocess. ``cache``: a folder where the answer is kept with the files it read (a
    PyTorch extension's headers take the compiler a second or more each request)."""
    compiler = _host_compiler()
    if compiler is None:
        return None
    command = [compiler, f"-std={std}", *(f"-D{k}={v}" for k, v in defines if k != "__cplusplus"),
               *(f"-isystem{d}" for d in dirs), "-dM", "-E", "-x", "c++", "-"]
    kept = _cached(cache, command, text) if cache is not None else None
    if kept is not None:
        return kept
    with tempfile.TemporaryDirectory(prefix="hfuse-macros-") as scratch:
        deps = Path(scratch) / "deps.d"
        try:
            done = subprocess.run([*command, "-MD", "-MF", str(deps), "-MT", "macros"], input=text,
                                  capture_output=True, text=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return None
        if done.returncode != 0:
            return None
        read = _dependencies(deps)
    out = {}
    for line in done.stdout.splitlines():
        m = _DEFINE.match(line)
        if m:
            out[m.group(1) + (m.group(2) or "")] = m.group(3) or ""
    if cache is not None and read is not None:
        _keep(cache, command, text, out, read)
    return out


def _dependencies(deps: Path) -> list[str] | None:
    """The files a ``-MD`` run read (make's syntax: ``target: a b \\`` lines)."""
    try:
        listed = deps.read_text().replace("\\\n", " ").split(":", 1)[1]
    except (OSError, IndexError):
        return None
    return [name.replace("\\ ", " ") for name in re.findall(r"(?:\\ |\S)+", listed)]


def _signature(path: str) -> list | None:
    try:
        found = os.stat(path)
    except OSError:
        return None
    return [found.st_size, found.st_mtime_ns]


def _cache_file(cache: Path, command: list[str], text: str) -> Path:
    compiler = _signature(command[0])
    key = hashlib.sha256(json.dumps([command, compiler, text]).encode()).hexdigest()[:32]
    return cache / "host_macros" / f"{key}.json"


def _cached(cache: Path, command: list[str], text: str) -> dict[str, str] | None:
    """A kept answer whose every file is as it was read (size and time), else None."""
    try:
        kept = json.loads(_cache_file(cache, command, text).read_text())
        if all(_signature(path) == signature for path, signature in kept["read"]):
            return dict(kept["macros"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _keep(cache: Path, command: list[str], text: str, macros: dict[str, str], read: list[str]) -> None:
    signatures = [(path, _signature(path)) for path in read]
    if any(signature is None for _, signature in signatures):
        return  # a file gone already: nothing to check the answer against later
    try:
        write_atomically(_cache_file(cache, command, text), json.dumps({"read": signatures, "macros": macros}))
    except Exception:  # a read-only cache or a full disk: asked again next time
        pass


@functools.cache
def header_macros(header: str | tuple[str, ...], std: str = "c++17", dirs: tuple[str, ...] = (),
                  defines: tuple[tuple[str, str], ...] = (), toolkit: tuple[str, ...] = ()) -> tuple[tuple[str, str], ...]:
    """``(name or name(params), value)`` of every macro ``#include <header>`` (of each, for a
    tuple of headers: one compiler run) defines beyond
    the compiler's own predefined ones; empty when there is no host compiler or the header
    does not preprocess alone. ``dirs``: installed libraries' folders to search too.
    ``defines``: the device pass's predefined macros (``__CUDACC__``, ``__CUDA_ARCH__``): a
    library defines its macros for nvcc's device pass (``C10_HOST_DEVICE`` is ``__host__
    __device__`` there, empty for the host compiler alone). ``toolkit``: the CUDA toolkit's
    folders, for the headers that include its own (its macros come along: the caller
    keeps ``__device__`` and the like out of the device pass)."""
    cache = default_cache_dir()
    base = _defines("", std, (), defines, cache)
    headers = (header,) if isinstance(header, str) else header
    found = _defines("".join(f"#include <{h}>\n" for h in headers), std, (*dirs, *toolkit), defines, cache)
    if base is None or found is None:
        return ()
    plain = {key.split("(")[0] for key in base}
    own = [(key, value) for key, value in found.items() if key.split("(")[0] not in plain]
    # the header's macros expand to the compiler's numeric ones (UCHAR_MAX -> __SCHAR_MAX__ * 2 + 1):
    # those come along, or the expanded text names macros NVRTC does not have
    numeric = [(key, value) for key, value in base.items() if _NUMERIC.match(key)]
    return tuple(own + numeric) if own else ()


STANDARD_HEADERS = ("cassert", "cfloat", "climits", "cmath", "cstddef", "cstdint", "cstdio", "cstdlib", "cstring",
                    "ctime", "type_traits", "limits", "unistd.h")
"""The C and C++ library headers whose macros NVRTC gets another way (``codegen/includes.py``)."""


@functools.cache
def standard_macro_names(std: str = "c++17", defines: tuple[tuple[str, str], ...] = ()) -> frozenset[str]:
    """The names the C and C++ library's headers (and the compiler) define: ``FLT_MAX``,
    ``M_PI``, ``__FLT_MAX__``. Not a library's own macros, whatever header brought them."""
    found = _defines("".join(f"#include <{h}>\n" for h in STANDARD_HEADERS), std, (), defines, default_cache_dir())
    return frozenset(key.split("(")[0] for key in (found or {}))


Table = Mapping[str, tuple[str, str]]
"""System macros by name: ``(name or name(params), value)``."""


def is_macro_like(name: str) -> bool:
    return _MACRO_LIKE.match(name) is not None


def structural(table: Table, name: str, depth: int = 0) -> bool:
    """Whether macro ``name`` expands (through the other macros of ``table``) to syntax
    that hfuse must see to parse and rewrite the code: a keyword, an attribute, a block
    built-in or barrier, a brace or a semicolon (``CUDA_KERNEL_LOOP(i, n)``,
    ``C10_LAUNCH_BOUNDS_1(256)``, ``C10_HOST_DEVICE``), or, taking arguments, to a name
    (``ROCM_HIPCUB(x)`` is ``x``: ``namespace cub = ROCM_HIPCUB(at_cuda_detail::cub);`` and
    ``ROCM_HIPCUB(cub)::BlockReduce<T, 256>`` are declarations only once it is expanded)."""
    key, value = table[name]
    if _STRUCTURAL.search(value) or any(c in value for c in "{};"):
        return True
    if "(" in key and _NAME.match(value.strip()):
        return True
    return depth < 8 and any(structural(table, n, depth + 1) for n in set(_IDENTIFIER.findall(value))
                             if n in table and n != name)


def pure_value(table: Table, name: str, depth: int = 0) -> bool:
    """Whether macro ``name`` expands (through the other macros of ``table``) to an
    expression of constants and its arguments only: no syntax, no call of a function but
    the compiler's own (``C10_UNLIKELY(x)`` is ``__builtin_expect(static_cast<bool>(x), 0)``)."""
    value = table[name][1]
    if structural(table, name):
        return False
    for called in re.finditer(r"([A-Za-z_]\w*)\s*\(", value):
        callee = called.group(1)
        if callee not in table and callee not in ("sizeof", "alignof", "decltype", "static_cast") \
                and not callee.startswith("__builtin_"):
            return False
    return depth < 8 and all(pure_value(table, n, depth + 1) for n in set(_IDENTIFIER.findall(value))
                             if n in table and n != name)
