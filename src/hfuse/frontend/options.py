"""How the user's sources are compiled: nvcc's preprocessing flags as one value.

``-I``, ``-D``, ``-U``, ``-include`` and ``-std`` mean what they mean to nvcc, and so do
the language flags a build gives both nvcc and NVRTC (``--expt-relaxed-constexpr``,
``--extended-lambda``, ``--use_fast_math``...). The same
``CompileOptions`` drives preprocessing (which conditionals hold, which headers are read),
the NVRTC and nvcc compiles of the fused file, and the tuning cache key, so a kernel is
never fused under one set of macros and compiled or cached under another.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Literal, Sequence

from ..errors import HFuseError
from ..toolkit import another_projects_dir, installed_package_dir, pip_cuda_library_dirs, pytorch_include_dirs

DEFAULT_STD = "c++17"
DEFAULT_ARCH = "sm_90"
KNOWN_STDS = ("c++11", "c++14", "c++17", "c++20")

LANGUAGE_SWITCHES = {"expt-relaxed-constexpr": "expt-relaxed-constexpr", "extended-lambda": "extended-lambda",
                     "expt-extended-lambda": "extended-lambda", "use_fast_math": "use_fast_math"}
"""nvcc's flags that change what device code may say (device code calling ``constexpr``
host functions, ``__device__`` lambdas) or what it computes (fast math), each spelling to
nvcc's own (``-expt-extended-lambda``: ``--extended-lambda``); ``language_flags_for`` says
what NVRTC takes of them."""
LANGUAGE_VALUED = ("ftz", "prec-div", "prec-sqrt", "fmad")
"""Those that take ``=true`` or ``=false``."""


CompilerKind = Literal["nvcc", "nvrtc", "clang"]

NVRTC_LANGUAGE = {"--expt-relaxed-constexpr": None, "--extended-lambda": None}
"""NVRTC (13.0) knows neither flag, and needs neither: hfuse's NVRTC compiles take
``-default-device`` (``runtime.compile.Compiler``), under which a ``constexpr`` function
without an execution space that device code calls (what the first allows under nvcc) is a
device function, and the lambdas of the code hfuse emits carry no execution space
(``transform/lambda_spaces.py``)."""


def language_flags_for(flags: Sequence[str], compiler: CompilerKind) -> list[str]:
    """What ``compiler`` is given of the language flags ``flags``."""
    if compiler == "clang":
        return []  # Clang allows both; its answers do not depend on the math flags
    if compiler == "nvrtc":
        return [spelled for f in flags if (spelled := NVRTC_LANGUAGE.get(f, f)) is not None]
    return list(flags)


def language_flag(text: str) -> str:
    """``text`` (``-use_fast_math``, ``--ftz=true``...) as nvcc spells it."""
    name, sep, value = text.lstrip("-").partition("=")
    if not sep and name in LANGUAGE_SWITCHES:
        return f"--{LANGUAGE_SWITCHES[name]}"
    if sep and name in LANGUAGE_VALUED and value in ("true", "false"):
        return f"--{name}={value}"
    known = [f"--{n}" for n in dict.fromkeys(LANGUAGE_SWITCHES.values())] + [f"--{n}=true|false" for n in LANGUAGE_VALUED]
    raise HFuseError(f"'{text}' is not a language flag hfuse knows", hint=f"known: {', '.join(known)}")


@dataclass(frozen=True)
class Define:
    """``-D NAME`` (value ``1``, as nvcc gives it) or ``-D NAME=VALUE``."""

    name: str
    value: str = "1"

    @classmethod
    def parse(cls, text: str) -> "Define":
        name, sep, value = text.partition("=")
        name = name.strip()
        if not name or not (name[0].isalpha() or name[0] == "_") or not all(c.isalnum() or c == "_" for c in name.split("(")[0]):
            raise HFuseError(f"-D '{text}' does not define a macro: use -D NAME or -D NAME=VALUE")
        return cls(name, value if sep else "1")

    def __str__(self) -> str:
        return f"{self.name}={self.value}"


@dataclass(frozen=True)
class CompileOptions:
    """nvcc-style preprocessing and language options for the user's sources."""

    include_dirs: tuple[Path, ...] = ()
    """``-I DIR``: searched, in order, for ``#include "..."`` (after the including file's
    folder) and ``#include <...>``. Headers found here are the user's and are read."""
    defines: tuple[Define, ...] = ()
    """``-D NAME[=VALUE]``, in command-line order."""
    system_include_dirs: tuple[Path, ...] = ()
    """``-isystem DIR``: searched after ``-I`` (as nvcc does). Headers found here are an
    installed library's: read for their macros and declarations, never copied into the
    output, kept as ``#include`` lines (as are headers an ``-I`` reaches inside an installed
    Python package, PyTorch's among them)."""
    undefines: tuple[str, ...] = ()
    """``-U NAME``: applied after every ``-D`` (and after the CUDA predefined macros)."""
    pre_includes: tuple[Path, ...] = ()
    """``-include FILE``: read before each source, as if its first line included it."""
    std: str = DEFAULT_STD
    """``-std``: the language dialect for NVRTC and nvcc (and ``__cplusplus``)."""
    arch: str = DEFAULT_ARCH
    """The device pass that preprocessing models (``__CUDA_ARCH__``): sm_90 is 900."""
    language_flags: tuple[str, ...] = ()
    """``--expt-relaxed-constexpr``, ``--extended-lambda``, ``--use_fast_math``, ``--ftz=``,
    ``--prec-div=``, ``--prec-sqrt=``, ``--fmad=`` as the user's build gives them: every
    nvcc compile of the originals and of the fused file gets them (a kernel calling
    ``std::max`` compiles only with the first; fast math changes results, of the originals
    and the fused kernel alike), every NVRTC compile the math ones (``language_flags_for``).
    Clang's front end needs none of them."""
    library_include_dirs: tuple[Path, ...] = ()
    """Of ``include_dirs``, those holding another project's headers (``for_inputs``): searched
    in their ``-I`` place, and taken as ``-isystem`` folders are (kept as ``#include`` lines,
    read for their macros and by Clang, never copied). Not part of the options as data
    (``to_dict``): each request finds them again from its inputs."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "language_flags", tuple(dict.fromkeys(language_flag(str(f))
                                                                        for f in self.language_flags)))
        object.__setattr__(self, "include_dirs", tuple(Path(d) for d in self.include_dirs))
        object.__setattr__(self, "system_include_dirs", tuple(Path(d) for d in self.system_include_dirs))
        object.__setattr__(self, "library_include_dirs", tuple(Path(d) for d in self.library_include_dirs))
        object.__setattr__(self, "pre_includes", tuple(Path(f) for f in self.pre_includes))
        object.__setattr__(
            self, "defines", tuple(d if isinstance(d, Define) else Define.parse(str(d)) for d in self.defines)
        )
        object.__setattr__(self, "undefines", tuple(str(u) for u in self.undefines))
        if self.std not in KNOWN_STDS:
            raise HFuseError(f"-std={self.std} is not one of {', '.join(KNOWN_STDS)}")
        if not self.arch.startswith(("sm_", "compute_")) or not self.arch.split("_", 1)[1].rstrip("af").isdigit():
            raise HFuseError(f"arch '{self.arch}' is not like sm_90 or sm_90a")

    @property
    def emitted_std(self) -> str:
        """The dialect hfuse's own files (fused kernels, device sides) compile under: at
        least C++17, which NVRTC's libcu++ headers need. They carry no ``register``
        (the one C++14 construct C++17 removed; ``transform/register_keyword.py``)."""
        return max(self.std, "c++17")

    @property
    def cuda_arch(self) -> int:
        """``__CUDA_ARCH__`` of the modelled device pass (sm_90a -> 900)."""
        return int(self.arch.split("_", 1)[1].rstrip("af")) * 10

    @property
    def arch_macros(self) -> tuple[tuple[str, str], ...]:
        """The ``__CUDA_ARCH__`` family nvcc's device pass defines for ``arch``, as
        ``nvcc --dryrun`` shows them: an architecture-specific target (sm_90a) also defines
        its feature macros, a family one (sm_100f) the family's."""
        number = str(self.cuda_arch)
        macros = [("__CUDA_ARCH__", number), ("__CUDA_ARCH_LIST__", number)]
        if self.arch.endswith("a"):
            macros += [(f"__CUDA_ARCH_FEAT_SM{number[:-1]}_ALL", "1"), ("__CUDA_ARCH_SPECIFIC__", number),
                       ("__CUDA_ARCH_FAMILY_SPECIFIC__", number)]
        elif self.arch.endswith("f"):
            macros += [("__CUDA_ARCH_FAMILY_SPECIFIC__", number)]
        return tuple(macros)

    def for_inputs(self, inputs: Sequence[Path]) -> "CompileOptions":
        """These options, the ``-I`` folders that hold another project's headers than the
        source files ``inputs`` (``toolkit.another_projects_dir``: a git submodule or other
        checkout, a ``third_party`` or CMake ``_deps`` folder, an installed package) marked as
        libraries: CUTLASS given with ``-I`` is not read as the user's own code."""
        found = tuple(d for d in self.include_dirs if d.is_dir() and another_projects_dir(d, inputs))
        return self if found == self.library_include_dirs else replace(self, library_include_dirs=found)

    def is_library_dir(self, folder: Path) -> bool:
        """Whether the ``-I`` folder ``folder`` is a library's (``for_inputs``)."""
        return Path(folder) in self.library_include_dirs or installed_package_dir(folder)

    def library_hint(self, error: HFuseError) -> HFuseError:
        """``error``, where it is in a header an ``-I`` folder of the user's reached, with a
        hint that the folder may be a library's (CUTLASS cloned beside the project)."""
        where = Path(error.where.file).resolve() if error.where.file else None
        folder = next((d for d in self.include_dirs if where is not None and not self.is_library_dir(d)
                       and where.is_relative_to(d.resolve())), None)
        if folder is not None:
            why = (f"{where.name} is reached through -I {folder}, read as your own code; if that folder "
                   f"holds a library's headers, give it as -isystem {folder}: hfuse then keeps them as "
                   "#include lines and asks Clang what their device code does")
            error.hint = f"{error.hint}; {why}" if error.hint else why
        return error

    def with_arch(self, arch: str) -> "CompileOptions":
        return replace(self, arch=arch)

    def resolved(self, base: Path) -> "CompileOptions":
        """Relative ``-I``/``-include`` paths taken relative to ``base`` (a config file's folder)."""
        return replace(
            self,
            include_dirs=tuple(d if d.is_absolute() else base / d for d in self.include_dirs),
            system_include_dirs=tuple(d if d.is_absolute() else base / d for d in self.system_include_dirs),
            pre_includes=tuple(f if f.is_absolute() else base / f for f in self.pre_includes),
        )

    def compiler_flags(self, *, std: bool = True, pre_includes: bool = True,
                       compiler: CompilerKind = "nvcc") -> list[str]:
        """The flags for ``compiler`` (no ``-arch``: each compile picks its own).

        ``std=False`` leaves ``-std`` to a compiler object that sets it itself.
        ``pre_includes=False`` is for compiling hfuse's *output*: the ``-include`` files'
        contents are already inlined there, and including them again would define their
        contents twice. ``-I/-D/-U`` stay: the toolkit headers the output keeps may read them.
        The language flags go to nvcc as given and to NVRTC as it spells them
        (``language_flags_for``); Clang's front end takes none of them.
        """
        flags = [f"-std={self.std}"] if std else []
        flags += [f"-I{d}" for d in self.include_dirs]
        # NVRTC has no -isystem; -I after the user's folders searches them in nvcc's order
        flags += [f"-I{d}" for d in self.system_include_dirs]
        flags += [f"-D{d}" for d in self.defines]
        flags += [f"-U{u}" for u in self.undefines]
        if pre_includes:
            for f in self.pre_includes:
                flags += ["-include", str(f)]
        if compiler != "nvrtc":
            # PyTorch's folders, which hfuse reads without being told when torch is installed
            # (``preprocess.library_header_dirs``): the files it keeps include from there
            given = {d.resolve() for d in (*self.include_dirs, *self.system_include_dirs) if d.is_dir()}
            torch_dirs = pytorch_include_dirs()
            flags += [flag for d in torch_dirs if d.resolve() not in given for flag in ("-isystem", str(d))]
            if torch_dirs and compiler == "nvcc":
                # PyTorch's CUDA headers include cusparse.h and cublas_v2.h, which a pip-installed
                # torch brings as packages; nvcc searches its toolkit's folder (-I) first
                flags += [flag for d in pip_cuda_library_dirs() if d not in given for flag in ("-isystem", str(d))]
        flags += language_flags_for(self.language_flags, compiler)
        return flags

    def pre_include_flags(self) -> list[str]:
        """``-include FILE`` for each pre-include: what compiling an *original* source needs
        on top of ``compiler_flags(pre_includes=False)``."""
        return [flag for f in self.pre_includes for flag in ("-include", str(f))]

    def extended(
        self,
        include_dirs: Sequence[str | Path] = (),
        defines: Sequence[str] = (),
        undefines: Sequence[str] = (),
        pre_includes: Sequence[str | Path] = (),
        std: str | None = None,
        arch: str | None = None,
        system_include_dirs: Sequence[str | Path] = (),
        language_flags: Sequence[str] = (),
    ) -> "CompileOptions":
        """These options with command-line flags on top (a config file's, then the flags).

        ``-I`` folders given here are searched *before* this object's (the command line
        overrides a config's header); ``-D``/``-U`` and ``-include`` come after (a later
        ``-D`` of a name wins, as with nvcc); ``std``/``arch`` replace when given.
        """
        return replace(
            self,
            include_dirs=tuple(Path(d) for d in include_dirs) + self.include_dirs,
            system_include_dirs=tuple(Path(d) for d in system_include_dirs) + self.system_include_dirs,
            defines=self.defines + tuple(Define.parse(d) for d in defines),
            undefines=self.undefines + tuple(undefines),
            pre_includes=self.pre_includes + tuple(Path(f) for f in pre_includes),
            std=std or self.std,
            arch=arch or self.arch,
            language_flags=self.language_flags + tuple(language_flags),
        )

    @classmethod
    def shared(cls, each: Sequence["CompileOptions"]) -> tuple["CompileOptions", tuple[str, ...]]:
        """What one compile of a file made from sources built with ``each`` needs (the fused
        file, whose parts came from files of different build commands), and what it had to
        leave out: every folder, pre-include and language flag any of them has (in order), the
        ``-D``/``-U`` all agree on (hfuse expanded each file's own uses of its macros; a kept
        header reads only what all agree on), the newest dialect, the first's architecture."""
        if not each:
            return cls(), ()
        first = each[0]

        def both(field: str) -> tuple:
            return tuple(dict.fromkeys(x for o in each for x in getattr(o, field)))

        agreed = [d for d in dict.fromkeys(d for o in each for d in o.defines) if all(d in o.defines for o in each)]
        differ = sorted({d.name for o in each for d in o.defines} - {d.name for d in agreed})
        archs = sorted({o.arch for o in each})
        notes = ((f"the builds do not agree on -D {', '.join(differ)}: the fused file's kept headers see none of "
                  "them (each file's own uses were expanded with its own)",) if differ else ()) + (
                 (f"the builds are for {', '.join(archs)}: the fused file is for {first.arch}",) if len(archs) > 1
                 else ())
        merged = replace(first, include_dirs=both("include_dirs"), system_include_dirs=both("system_include_dirs"),
                         defines=tuple(agreed), undefines=both("undefines"), pre_includes=both("pre_includes"),
                         std=max((o.std for o in each), key=KNOWN_STDS.index),
                         language_flags=both("language_flags"), library_include_dirs=both("library_include_dirs"))
        return merged, notes

    def to_dict(self) -> dict[str, Any]:
        """As data, for plans and cache keys (paths as given, defines in order)."""
        return {
            "include_dirs": [str(d) for d in self.include_dirs],
            **({"system_include_dirs": [str(d) for d in self.system_include_dirs]} if self.system_include_dirs else {}),
            "defines": [str(d) for d in self.defines],
            "undefines": list(self.undefines),
            "pre_includes": [str(f) for f in self.pre_includes],
            "std": self.std,
            "arch": self.arch,
            **({"language_flags": list(self.language_flags)} if self.language_flags else {}),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "CompileOptions":
        data = dict(data or {})
        unknown = set(data) - {"include_dirs", "system_include_dirs", "defines", "undefines", "pre_includes", "std",
                               "arch", "language_flags"}
        if unknown:
            raise HFuseError(
                f"unknown compile options: {', '.join(sorted(unknown))} "
                "(known: include_dirs, system_include_dirs, defines, undefines, pre_includes, std, arch, "
                "language_flags)"
            )
        return cls(
            include_dirs=tuple(_strings(data.get("include_dirs"), "include_dirs")),
            system_include_dirs=tuple(_strings(data.get("system_include_dirs"), "system_include_dirs")),
            defines=tuple(_strings(data.get("defines"), "defines")),
            undefines=tuple(_strings(data.get("undefines"), "undefines")),
            pre_includes=tuple(_strings(data.get("pre_includes"), "pre_includes")),
            std=str(data.get("std", DEFAULT_STD)),
            arch=str(data.get("arch", DEFAULT_ARCH)),
            language_flags=tuple(_strings(data.get("language_flags"), "language_flags")),
        )

    @classmethod
    def from_flags(
        cls,
        include_dirs: Sequence[str] = (),
        defines: Sequence[str] = (),
        undefines: Sequence[str] = (),
        pre_includes: Sequence[str] = (),
        std: str | None = None,
        arch: str | None = None,
        system_include_dirs: Sequence[str] = (),
        language_flags: Sequence[str] = (),
    ) -> "CompileOptions":
        return cls(
            include_dirs=tuple(Path(d) for d in include_dirs),
            system_include_dirs=tuple(Path(d) for d in system_include_dirs),
            defines=tuple(Define.parse(d) for d in defines),
            undefines=tuple(undefines),
            pre_includes=tuple(Path(f) for f in pre_includes),
            std=std or DEFAULT_STD,
            arch=arch or DEFAULT_ARCH,
            language_flags=tuple(language_flags),
        )


def _strings(value: Any, key: str) -> Iterable[str]:
    if value is None:
        return ()
    if isinstance(value, (str, int)):
        return (str(value),)
    if isinstance(value, list) and all(isinstance(v, (str, int)) for v in value):
        return tuple(str(v) for v in value)
    raise HFuseError(f"'{key}' must be a string or a list of strings, not {type(value).__name__}")


NO_OPTIONS = CompileOptions()
"""The options of a plain ``nvcc -arch=sm_90 file.cu``."""

__all__ = ["CompileOptions", "Define", "NO_OPTIONS", "DEFAULT_STD", "DEFAULT_ARCH"]
