"""Data for ``__constant__`` and ``__device__`` symbols: names, sizes, fused names, copies.

A kernel that reads a table the host fills with ``cudaMemcpyToSymbol`` computes garbage
unless every module that holds it (the original's, each fused candidate's, the plan
launcher's) gets the same bytes before it runs. Everything here but ``write_symbols``
runs on the CPU:

- *names*: a symbol is looked up in a module by its lowered (mangled) name. NVRTC gives
  it for the name expression ``&name`` (``&mylib::filter`` -> ``_ZN5mylib6filterE``), so
  every compile that will receive symbol data adds those expressions
  (``symbol_expressions``); ``compile_with_symbols`` turns NVRTC's complaint about an
  expression into an error that names the symbol and the kernel.
- *sizes*: CuPy's ``RawModule.get_global`` does not report a global's size, so we read it
  from the cubin's ELF symbol table (``cubin_symbol_sizes``), and refuse data of another
  size before anything is copied.
- *fused names*: two parts may both define ``coeffs``; the front end renames them per part
  (``FusedKernel.symbol_names``), and ``fused_symbols`` gathers every part's data under the
  fused names, refusing two different contents for one shared symbol.
- *copies*: ``write_symbols`` (behind ``CompiledKernel.set_symbols``) copies the bytes.
"""
from __future__ import annotations

import hashlib
import re
import struct
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, MutableMapping, Sequence

import numpy as np

from ..errors import HFuseError, Location
from ..launch import describe_symbol, symbol_bytes, symbol_nbytes
from .binary import CompileError
from .nvcc_runner import FAILED_NAME


class SymbolError(HFuseError):
    """Symbol data that does not fit the kernel's ``__constant__``/``__device__`` variables."""


# -- names ------------------------------------------------------------------------------

def symbol_expression(name: str) -> str:
    """NVRTC's name expression for a variable: its address, ``&name``."""
    return f"&{name[2:] if name.startswith('::') else name}"


def symbol_expressions(names: Iterable[str]) -> list[str]:
    """Name expressions for ``names`` (sorted, each once), to add to a compile's names."""
    return sorted({symbol_expression(n) for n in names})


def lowered_symbol(binary: Any, name: str) -> str | None:
    """The module-level name of symbol ``name`` in a ``CompiledBinary``.

    From NVRTC's lowered names when the compile had ``&name``; otherwise a name at file
    scope is its own symbol (C++ does not mangle variables there), and a qualified one is
    unknown (None).
    """
    lowered = binary.lowered.get(symbol_expression(name))
    if lowered:
        return lowered
    return None if "::" in name else name


_MANGLED_NAME_LINE = re.compile(rf"(?:#pragma\s+nv_mangled_name|{re.escape(FAILED_NAME)})\s+(\S.*?)\s*$", re.MULTILINE)


def failed_name_expressions(log: str) -> set[str]:
    """The name expressions a compile's log complains about (NVRTC quotes each in a pragma
    line; ``nvcc_runner`` adds a line of its own)."""
    return {m.group(1) for m in _MANGLED_NAME_LINE.finditer(log or "")}


def compile_with_symbols(compiler: Any, source: str, name: str, symbols: Iterable[str], *, kernel: str,
                         options: Sequence[str] = (), optional: bool = False) -> Any:
    """``compiler.compile(source, [name, &symbol...])``.

    A symbol the source does not define is a ``SymbolError`` naming it and ``kernel``
    (other failures stay ``CompileError``); with ``optional`` (a fused source, which
    leaves out definitions no fused kernel reads) it is compiled without that symbol's
    expression instead, and ``present_symbols`` leaves its data out.
    """

    expressions = {symbol_expression(s): s for s in symbols}
    try:
        return compiler.compile(source, [name, *sorted(expressions)], options=options)
    except CompileError as err:
        failed = {e for e in failed_name_expressions(err.log) if e in expressions}
        if not failed:
            raise
        if optional:
            return compiler.compile(source, [name, *sorted(set(expressions) - failed)], options=options)
        bad = sorted(expressions[e] for e in failed)
        raise SymbolError(
            f"symbol data was given for {', '.join(repr(b) for b in bad)}, but the source defines no "
            f"__constant__ or __device__ variable of that name",
            Location(kernel=kernel),
            hint="spell the name as the source does, qualified by its namespace (\"mylib::filter\"); "
            "NVRTC said:\n" + err.log.strip()[-2000:],
        ) from err


# -- sizes ------------------------------------------------------------------------------

_STT_OBJECT = 1
_SHT_SYMTAB = 2
_SHT_NOBITS = 8


@dataclass(frozen=True)
class CubinVariable:
    """A variable a cubin defines."""

    size: int
    initial: bytes
    """Its contents when the module is loaded: its initialiser's bytes, zeros without one."""


def cubin_variables(cubin: bytes) -> dict[str, CubinVariable]:
    """Every variable a cubin defines, by symbol name (ELF ``.symtab``).

    Cubins are 64-bit little-endian ELF files; a variable is an ``STT_OBJECT`` symbol
    with a section (``st_shndx != 0``), at ``st_value`` in that section (less its
    address); a ``NOBITS`` section (``.nv.global``) holds zeros. Raises ``ValueError``
    for something else.
    """
    data = memoryview(cubin)
    if len(data) < 64 or bytes(data[:4]) != b"\x7fELF":
        raise ValueError("not an ELF file")
    if data[4] != 2 or data[5] != 1:
        raise ValueError("not a 64-bit little-endian ELF file")
    (shoff,) = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(data):
        raise ValueError("truncated ELF section table")
    sections = []
    for i in range(shnum):
        _name, sh_type, _flags, addr, offset, size, link, _info, _align, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        sections.append((sh_type, addr, offset, size, link, entsize))
    found: dict[str, CubinVariable] = {}
    for sh_type, _addr, offset, size, link, entsize in sections:
        if sh_type != _SHT_SYMTAB:
            continue
        if link >= len(sections):
            raise ValueError("symbol table without a string table")
        _, _, str_off, str_size, _, _ = sections[link]
        strings = bytes(data[str_off:str_off + str_size])
        entsize = entsize or 24
        for pos in range(offset, offset + size - entsize + 1, entsize):
            st_name, st_info, _other, st_shndx, st_value, st_size = struct.unpack_from("<IBBHQQ", data, pos)
            if st_info & 0xF != _STT_OBJECT or st_shndx == 0 or st_shndx >= len(sections):
                continue
            end = strings.find(b"\0", st_name)
            name = strings[st_name:end if end >= 0 else None].decode(errors="replace")
            if name:
                found[name] = CubinVariable(int(st_size), _initial(data, sections[st_shndx], st_value, st_size))
    return found


def _initial(data: memoryview, section: tuple[int, ...], value: int, size: int) -> bytes:
    sh_type, addr, offset, length = section[:4]
    start = value - addr if value >= addr else value
    if sh_type == _SHT_NOBITS:
        return bytes(size)
    if start + size > length or offset + start + size > len(data):
        raise ValueError("a variable lies outside its section")
    return bytes(data[offset + start:offset + start + size])


def cubin_symbol_sizes(cubin: bytes) -> dict[str, int]:
    """Size in bytes of every variable a cubin defines, by symbol name."""
    return {name: v.size for name, v in cubin_variables(cubin).items()}


def symbol_layout(binary: Any, symbols: Mapping[str, Any], kernel: str) -> list[tuple[str, str, int]]:
    """``(name, lowered name, size)`` per symbol, after checking each exists in the binary
    and that its data has exactly its size. Nothing is copied; raises ``SymbolError``."""
    where = Location(kernel=kernel)
    try:
        sizes = cubin_symbol_sizes(binary.cubin)
    except (ValueError, struct.error) as exc:
        raise SymbolError(f"cannot read the variables of the compiled module ({exc})", where) from exc
    out = []
    for name in sorted(symbols):
        lowered = lowered_symbol(binary, name)
        if lowered is None:
            raise SymbolError(
                f"symbol '{name}' was not compiled with the name expression '{symbol_expression(name)}', so its "
                "mangled name is unknown", where,
                hint="hfuse adds these expressions when it compiles a kernel that gets symbol data; "
                "a launcher needs the symbols when it is made (hfuse.launcher(plan, symbols=...))",
            )
        size = sizes.get(lowered)
        if size is None:
            defined = ", ".join(sorted(sizes)) or "none"
            raise SymbolError(
                f"the compiled kernel has no __constant__ or __device__ variable '{name}' (symbol {lowered}); "
                f"it defines: {defined}", where,
            )
        given = symbol_nbytes(symbols[name])
        if given != size:
            what = describe_symbol(symbols[name])
            raise SymbolError(
                f"symbol '{name}' is {size} bytes, but its data is {given} bytes "
                f"({what['dtype']}, shape {tuple(what['shape'])})", where,
                hint="give exactly the variable's bytes, as cudaMemcpyToSymbol would copy for the whole variable",
            )
        out.append((name, lowered, size))
    return out


# -- fused names ------------------------------------------------------------------------

def present_symbols(binary: Any, symbols: Mapping[str, Any]) -> dict[str, Any]:
    """The part of ``symbols`` whose name expression ``binary``'s compile kept
    (``compile_with_symbols`` with ``optional`` drops those the source lacks)."""
    return {n: v for n, v in symbols.items() if symbol_expression(n) in binary.lowered}


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)


def _mentions(code: str, name: str) -> bool:
    return re.search(r"(?<![\w])" + re.escape(name.split("::")[-1]) + r"(?![\w])", code) is not None


def fused_symbol_names(renames: Sequence[Mapping[str, str]], per_part: Sequence[Iterable[str]],
                       source: str | None = None) -> dict[str, list[tuple[int, str]]]:
    """Fused name -> ``[(part index, the user's name), ...]`` for the symbols each part gets.

    ``renames`` is ``FusedKernel.symbol_names`` (empty: nothing renamed). With ``source``
    (the fused text), symbols it never mentions are left out: the fuser drops definitions
    no fused kernel reads, and their data has nowhere to go and no reader.
    """
    out: dict[str, list[tuple[int, str]]] = {}
    code = _COMMENT.sub(" ", source) if source is not None else None
    for index, names in enumerate(per_part):
        table = renames[index] if index < len(renames) else {}
        for name in names:
            key = name[2:] if name.startswith("::") else name
            fused = table.get(key, key)
            if code is not None and not _mentions(code, fused):
                continue
            out.setdefault(fused, []).append((index, key))
    return out


def fused_symbols(renames: Sequence[Mapping[str, str]], per_part: Sequence[Mapping[str, Any]],
                  kernels: Sequence[str], source: str | None = None) -> dict[str, Any]:
    """Every part's symbol data under the fused kernel's names.

    Two parts that give data for one symbol the fused kernel shares (not renamed: e.g. the
    same file's kernel twice) must give the same bytes; else a ``SymbolError``. Compares
    contents, so call it where a CuPy value may be read (the launching thread).
    """
    out: dict[str, Any] = {}
    for fused, owners in fused_symbol_names(renames, [list(s) for s in per_part], source).items():
        first_index, first_name = owners[0]
        value = per_part[first_index][first_name]
        for index, name in owners[1:]:
            other = per_part[index][name]
            if other is value or symbol_bytes(other) == symbol_bytes(value):
                continue
            raise SymbolError(
                f"kernels '{kernels[first_index]}' and '{kernels[index]}' give different data for symbol "
                f"'{fused}', which the fused kernel shares (one definition serves both parts)",
                Location(kernel=kernels[index]),
                hint="give both the same data, or keep these kernels unfused",
            )
        out[fused] = value
    return out


def symbols_digest(symbols: Mapping[str, Any]) -> str:
    """A short digest of names and contents: two mappings with one digest hold the same data."""
    h = hashlib.sha256()
    for name in sorted(symbols):
        h.update(name.encode() + b"\0" + hashlib.sha256(symbol_bytes(symbols[name])).digest())
    return h.hexdigest()[:16]


# -- copies (GPU) -----------------------------------------------------------------------

def write_symbols(module: Any, binary: Any, symbols: Mapping[str, Any], kernel: str,
                  written: MutableMapping[str, str], *, force: bool = False) -> list[str]:
    """Copies ``symbols`` into a loaded module's variables; returns the names copied.

    ``module`` is the ``cupy.RawModule`` the kernel came from, ``binary`` its
    ``CompiledBinary``; ``written`` remembers each symbol's last contents (SHA-256), so
    unchanged data is not copied again unless ``force`` (a kernel may have written to a
    ``__device__`` variable since). Every symbol is checked (exists, exact size)
    before the first byte moves. The device is synchronised before the copies (no kernel
    still reads the old contents, on any stream) and after (the new contents are in
    place before any later launch, on any stream).
    """
    layout = symbol_layout(binary, symbols, kernel)
    pending = []
    for name, lowered, size in layout:
        data = symbol_bytes(symbols[name])
        digest = hashlib.sha256(data).hexdigest()
        if force or written.get(name) != digest:
            pending.append((name, lowered, size, data, digest))
    if not pending:
        return []
    from .device import require_gpu

    cupy = require_gpu()
    device = cupy.cuda.Device()
    device.synchronize()
    for name, lowered, size, data, digest in pending:
        try:
            target = module.get_global(lowered)  # cupy.cuda.MemoryPointer to the variable
            host = np.frombuffer(data, dtype=np.uint8)
            target.copy_from_host(host.ctypes.data, size)  # cudaMemcpy, host to device, synchronous
        except Exception as exc:
            raise SymbolError(f"copying data into symbol '{name}' ({lowered}, {size} bytes) failed: "
                              f"{type(exc).__name__}: {exc}", Location(kernel=kernel)) from exc
        written[name] = digest
    device.synchronize()
    return [p[0] for p in pending]


@dataclass(frozen=True)
class DeviceVariable:
    """A ``__device__`` variable a kernel writes, compared after a run as its output arrays
    are: ``view`` is the module's variable as bytes (a CuPy array over it), ``initial`` what
    it holds before each run (the initialiser's bytes, or the symbol data the user gave)."""

    name: str
    view: Any = field(repr=False)
    initial: Any = field(repr=False)
    compare: str = "exact"
    rtol: float = 0.0
    atol: float = 0.0

    def restore(self) -> None:
        from .device import require_gpu

        require_gpu().copyto(self.view, self.initial)


def device_variables(module: Any, binary: Any, names: Sequence[str], given: Mapping[str, Any], *,
                     kernel: str) -> tuple[DeviceVariable, ...]:
    """Views of the variables ``names`` (compiled with their ``&name`` expressions) in a
    loaded module, each with its contents before a run. A name the module lacks is a
    ``SymbolError``: hfuse compiled the source, so that is hfuse's to explain, not a mismatch."""
    if not names:
        return ()
    from .device import require_gpu

    cupy = require_gpu()
    where = Location(kernel=kernel)
    try:
        found = cubin_variables(binary.cubin)
    except (ValueError, struct.error) as exc:
        raise SymbolError(f"cannot read the variables of the compiled module ({exc})", where) from exc
    out = []
    for name in names:
        lowered = lowered_symbol(binary, name)
        variable = found.get(lowered) if lowered else None
        if variable is None or module is None:
            raise SymbolError(f"the compiled kernel has no __device__ variable '{name}' to compare after the run "
                              f"(symbol {lowered or '?'})", where,
                              hint="report this: hfuse compiles every variable a kernel writes with its name")
        initial = symbol_bytes(given[name]) if name in given else variable.initial
        view = cupy.ndarray((variable.size,), dtype=cupy.uint8, memptr=module.get_global(lowered))
        out.append(DeviceVariable(name, view, cupy.asarray(np.frombuffer(initial, dtype=np.uint8))))
    return tuple(out)


def load_with_symbols(compiler: Any, binary: Any, name: str, symbols: Mapping[str, Any], *, kernel: str) -> Any:
    """``compiler.load(binary, name)`` in a module whose variables hold ``symbols``.

    Kernels of one binary share a module; each distinct set of symbol data gets a module
    of its own (instance = digest of the data), so two launches of one source with
    different tables never see each other's. The data is copied before this returns.
    """
    if not symbols:
        return compiler.load(binary, name)
    loaded = compiler.load(binary, name, instance="s" + symbols_digest(symbols))
    loaded.set_symbols(symbols, label=kernel)
    return loaded
