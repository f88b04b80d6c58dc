"""The user's macros that configure the headers hfuse keeps as ``#include`` lines.

hfuse expands the user's code with the user's macros and writes it out expanded (or with
the macros given back around it, ``codegen/macros.py``), but it does not read the toolkit's
and libraries' headers: those stay ``#include`` lines, read by the compiler of the fused
file. A file that writes ``#define NDEBUG`` before ``#include <cassert>`` (or
``__CUDA_NO_HALF_OPERATORS__`` before ``<cuda_fp16.h>``, ``CUB_IGNORE_DEPRECATED_API`` before
CUB) configures those headers; without the definition the fused file would get other
headers than the file did (its ``assert``s active, say). So such a macro is defined before
the include lines; after them it is undefined where an input did not define it (that part's
code never saw it), and stays defined where every input including kept headers did: the
headers' own macros, which the user's code keeps as written, may name it when they expand
(CUB's ``CUB_NS_QUALIFIER`` is ``::CUB_WRAPPED_NAMESPACE::cub``).

Which macros configure headers is not known without reading every header; taken are those
of the form headers consult: ``NDEBUG``, reserved names (``_GNU_SOURCE``, ``__CUDA_NO_...``)
and a library's prefix (``CUB_``, ``THRUST_``, ``CUTLASS_``...), object-like, defined in a
file above one of its kept ``#include`` lines; and any macro so defined that the headers of
an installed library the file includes mention (``frontend/library_text.py``: once, a
library's ``#ifdef MYLIB_DOUBLE_IT`` went the other way in the fused file, silently).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Sequence

from ..errors import HFuseError, Location
from ..frontend.model import SourceFile, UserMacro
from .includes import IncludePlan

_CONFIGURES = re.compile(r"NDEBUG$|_[A-Z_]|(?:CUB|THRUST|CCCL|LIBCUDACXX|CUTE|CUTLASS|CUDA|CUDART|TORCH|C10|AT|EIGEN|"
                         r"GLM|FMT|SPDLOG|BOOST)_")


@dataclass(frozen=True)
class HeaderConfiguration:
    before: tuple[str, ...] = ()
    """Lines before the include lines (a comment and the ``#define``s)."""
    after: tuple[str, ...] = ()
    """The ``#undef``s after them."""
    notes: tuple[str, ...] = ()
    """Inputs that include kept headers without a macro another input configures them with."""

    def around(self, plan: IncludePlan) -> IncludePlan:
        """``plan`` with the macros defined before its lines and undefined after them."""
        return replace(plan, lines=(*self.before, *plan.lines, *self.after)) if plan.lines and self.before else plan


def header_configuration(files: Sequence[SourceFile]) -> HeaderConfiguration:
    """What ``files`` define above their kept ``#include`` lines to configure those headers;
    two values of one macro are refused (the fused file includes each header once)."""
    chosen: dict[str, tuple[UserMacro, SourceFile]] = {}
    for source in files:
        includes = [item for item in source.items if item.kind == "include"]
        for macro in source.user_macros:
            library = macro.name in source.library_macros  # (a library header that mentions it: any form)
            if not library and (macro.params is not None or not _CONFIGURES.match(macro.name)) or macro.include_guard \
                    or not any(
                    str(item.file) == str(macro.file) and item.line > macro.line for item in includes):
                continue
            first, owner = chosen.setdefault(macro.name, (macro, source))
            if first.value.strip() != macro.value.strip():
                raise HFuseError(
                    f"'{macro.name}' configures the headers this file includes as '{macro.value}', and "
                    f"{owner.path.name} ({first.file.name}:{first.line}) as '{first.value}': the fused file includes "
                    "each header once, configured one way",
                    Location(macro.file, macro.line), hint="define it alike in both files, or keep these kernels unfused")
    if not chosen:
        return HeaderConfiguration()
    lacking = {name: [s for s in files if any(i.kind == "include" for i in s.items)
                      and name not in {m.name for m in s.user_macros}] for name in chosen}
    notes = tuple(
        f"note: {name}, which {owner.path.name} defines above its #include lines, configures the headers the fused "
        f"file includes for every part ({', '.join(s.path.name for s in lacking[name])} did not define it)"
        for name, (macro, owner) in chosen.items() if lacking[name])
    undefined = tuple(name for name in chosen if lacking[name])
    return HeaderConfiguration(
        (f"// macros your files define to configure the headers below{' (undefined after them)' if undefined else ''}",
         *(macro.definition for macro, _ in chosen.values())),
        tuple(f"#undef {name}" for name in undefined), notes)

