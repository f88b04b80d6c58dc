"""The device side of a program: what the chosen kernels need, and nothing else.

Sample programs hold ``main``, host helpers, ``cudaMalloc`` calls and host headers beside
their kernels. None of it belongs in the fused file (NVRTC cannot even read the host
headers), so the fused file holds the closure of what the kernels use: starting from the
kernels, every name they mention is resolved (``resolve.py``) to the program's
declarations, whose own names are followed in turn. Host functions and host variables
are never taken; types, templates, constants, ``__device__``/``__constant__`` globals and
device functions are. Free ``operator`` functions are taken whenever device code is,
since operators are called without being named.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .directive_names import DEVICE_NAMESPACES, STD
from .model import Function, TopLevelItem
from .program import Program, is_prototype
from .resolve import POINTER_DECLARATOR, LocalNames, using_declaration

# Namespaces of the CUDA toolkit that device code may name: their using-directives and
# aliases stay in the fused file. Any other namespace must be declared in the program.


@dataclass(frozen=True)
class DeviceClosure:
    items: tuple[TopLevelItem, ...]
    """What the fused file needs, in program order (kernels themselves excluded)."""
    dropped_host: tuple[str, ...]
    """Host functions left out, by name (for the output's header comment)."""
    dropped_unused: int
    """Device definitions no chosen kernel uses."""


_NAME = re.compile(r"(?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*")


def template_argument_names(arguments: Sequence[str]) -> frozenset[str]:
    """The names ``-k 'NAME<ARGS>'`` arguments mention (``Mul<float>``, ``ops::add``): what
    they name is needed too, though no kernel body mentions it."""
    return frozenset("".join(m.group().split()) for a in arguments for m in _NAME.finditer(a))


def device_closure(program: Program, kernels: Sequence[Function],
                   template_arguments: Sequence[Sequence[str]] = ()) -> DeviceClosure:
    """``template_arguments``: each kernel's ``-k 'NAME<ARGS>'`` arguments, in ``kernels`` order."""
    resolver = program.resolver
    by_key: dict[str, list[int]] = {}
    for index, item in enumerate(program.items):
        if not item.device or item.kind in ("include", "using"):
            continue
        keys = (item.function.key,) if item.function is not None else item.keys
        for key in (*keys, *(m.key for m in item.members)):
            by_key.setdefault(key, []).append(index)
    # a class's members defined outside it travel with it (no code names them but through objects)
    outside = {id(item.function): index for index, item in enumerate(program.items)
               if item.function is not None and item.function.defined_outside}
    taken: set[int] = set()
    kernel_keys = {k.key for k in kernels}
    pending = [(k.scope, k.text, _item_references(program, k)) for k in kernels]
    pending += [((), "", template_argument_names(arguments)) for arguments in template_arguments]
    operators = [i for i, item in enumerate(program.items)
                 if item.device and item.function is not None and item.function.name.startswith("operator")]
    for index in operators:
        item = program.items[index]
        taken.add(index)
        pending.append((item.scope, item.text, item.references))
    if any(_takes_functions(program, k) for k in kernels):
        # the caller passes a function's address, which must be one of the fused module's: the
        # variables that hold functions stay, for the host to read (cudaMemcpyFromSymbol)
        files = {k.file for k in kernels}
        for index, item in enumerate(program.items):
            if item.file in files and item.device and set(item.keys) & program.resolver.pointer_variables \
                    and index not in taken:
                taken.add(index)
                pending.append((item.scope, item.text, item.references))
    for item in program.items:
        if item.kind == "other" and item.device and item.text.lstrip().startswith("static_assert"):
            # kept (below), so what it names is kept too (a typedef, a constant)
            pending.append((item.scope, item.text, item.references))

    def close(pending: list[tuple[tuple[str, ...], str, frozenset[str]]]) -> None:
        while pending:
            scope, text, references = pending.pop()
            local = LocalNames.of_text(text)  # a body's own using-directives and -declarations
            for written in references:
                key = resolver.resolve(scope, written, local)
                for index in by_key.get(key, []) if key is not None else []:
                    item = program.items[index]
                    if index in taken or (item.function is not None and item.function.key in kernel_keys):
                        continue
                    taken.add(index)
                    pending.append((item.scope, item.text, item.references))
                    for member in (outside[id(m)] for m in item.members if id(m) in outside):
                        if member not in taken:
                            taken.add(member)
                            pending.append((program.items[member].scope, program.items[member].text,
                                            program.items[member].references))

    close(pending)
    while brought := _brought_targets(program, by_key, taken, kernels):
        # a using-declaration kept for a name written (below) needs what it brings: beside the
        # namespace's own `scale(int)`, `using detail::scale;` adds `scale(float)` a call may pick
        taken.update(brought)
        close([(program.items[i].scope, program.items[i].text, program.items[i].references) for i in brought])
    written = _written_names(program, taken, kernels)
    emitted = {key for i in taken for key in program.items[i].keys} | {k.key for k in kernels}
    for index, item in enumerate(program.items):
        if item.kind == "using" and _device_namespace(program, item):
            taken.add(index)
        elif item.kind == "declaration" and (brought := using_declaration(item.text)) is not None:
            # ``using cub::BlockReduce;``: kept where it names into a namespace device code may use;
            # ``using std::numeric_limits;`` or a kept library's ``using vendor::clamp01;`` where
            # device code names it (else it may name host code)
            target = program.resolver.namespace(item.scope, brought.rsplit("::", 1)[0])
            if target in program.resolver.namespaces:
                # the user's: left out only where it brings what is not emitted and nothing emitted
                # writes its name (FlashInfer's `using cp_async::PrefetchMode;`, its enum left out);
                # where a name is written, kept (an overload it may add is the compiler's to choose)
                named = program.resolver.resolve(item.scope, brought)
                if named is None or named in emitted or brought.rsplit("::", 1)[-1] in written:
                    taken.add(index)
            elif target.split("::")[0] in DEVICE_NAMESPACES or brought.rsplit("::", 1)[-1] in written:
                taken.add(index)
        elif item.kind == "other" and item.text.lstrip().startswith(("#pragma", "static_assert")):
            taken.add(index)
    items = tuple(item for index, item in enumerate(program.items) if index in taken)
    host = tuple(dict.fromkeys(
        item.function.name for item in program.items
        if item.function is not None and item.function.kind == "host" and not item.device  # constexpr ones travel
    ))
    unused = sum(1 for i, item in enumerate(program.items)
                 if i not in taken and item.device and item.kind in ("function", "declaration")
                 and not (item.function is not None and item.function.kind == "global"))
    return DeviceClosure(items, host, unused)


def _written_names(program: Program, taken: set[int], kernels: Sequence[Function]) -> set[str]:
    """The unqualified names the kernels and the items taken write."""
    return {name.rsplit("::", 1)[-1] for references in [*(_item_references(program, k) for k in kernels),
                                                        *(program.items[i].references for i in taken)]
            for name in references}


def _brought_targets(program: Program, by_key: dict[str, list[int]], taken: set[int],
                     kernels: Sequence[Function]) -> list[int]:
    """The items not yet taken that a using-declaration of the user's own namespace brings
    where what is taken writes the name it brings."""
    written = _written_names(program, taken, kernels)
    found: list[int] = []
    for item in program.items:
        brought = using_declaration(item.text) if item.kind == "declaration" else None
        if brought is None or brought.rsplit("::", 1)[-1] not in written:
            continue
        if program.resolver.namespace(item.scope, brought.rsplit("::", 1)[0]) not in program.resolver.namespaces:
            continue
        named = program.resolver.resolve(item.scope, brought)
        found += [i for i in by_key.get(named, []) if i not in taken and i not in found] if named else []
    return found


def declares_one_of(item: TopLevelItem, functions: frozenset[str]) -> bool:
    """Whether ``item`` defines or declares (a prototype) a function among ``functions``
    (keys): where every part has its own copy of it, emitted callees first, neither is."""
    if item.function is not None:
        return item.function.key in functions
    return is_prototype(item) and bool(set(item.keys) & functions)


def brings_one_of(item: TopLevelItem, program: Program, functions: frozenset[str]) -> bool:
    """Whether ``item`` is a ``using d::lanes;`` of a function among ``functions`` (keys): where
    every part has its own copy of it and the original is not emitted, each part has its own
    using-declaration instead (``transform/specialize.py``)."""
    brought = using_declaration(item.text) if item.kind == "declaration" else None
    return brought is not None and program.resolver.resolve(item.scope, brought, known=set(program.functions)) in functions


def _takes_functions(program: Program, kernel: Function) -> bool:
    """Whether the kernel's caller gives it a function's address: a parameter that holds one
    (``float (*op)(float)``, ``unary_op op``) or an object of a class with a member that does."""
    resolver = program.resolver
    for param in kernel.params:
        written = param.text[:param.name_start] if param.name_start >= 0 else param.text
        if POINTER_DECLARATOR.search(param.text) or resolver.holds_function(kernel.scope, written.rstrip(" *&")):
            return True
        for name in _NAME.findall(written):
            key = resolver.resolve(kernel.scope, name)
            if key is not None and resolver.class_fields.get(key, frozenset()) & resolver.pointer_fields:
                return True
    return False


def _item_references(program: Program, kernel: Function) -> frozenset[str]:
    """What the kernel's item names (an explicit specialisation's, which ``specialised``
    returns rewritten as a template of the primary's parameters: its item by where it starts)."""
    for item in program.items:
        if item.function is kernel:
            return item.references
    return next((item.references for item in program.items if item.function is not None
                 and item.function.is_explicit_specialisation and item.function.kind == "global"
                 and (item.function.file, item.function.line) == (kernel.file, kernel.line)), frozenset())


def _device_namespace(program: Program, item: TopLevelItem) -> bool:
    """A using-directive or alias of a namespace device code may use: every one but those
    of ``std``'s own namespaces (``std::chrono``: host code). ``using namespace std;`` stays
    (device code may lean on it for ``is_same_v`` or ``min``), and so does one of a kept
    library's namespace (``using namespace cute;``, which hfuse does not read): the file
    declares each such namespace empty first (``nominated_namespaces``), so that a directive of a
    namespace only a dropped host header had stays valid."""
    target = program.resolver.namespace(item.scope, item.nominates or "")
    return not target.startswith(STD + "::")


def nominated_namespaces(program: Program, items: Sequence[TopLevelItem]) -> list[tuple[str, ...]]:
    """The namespaces that the using-directives and aliases among ``items`` name, to be
    declared empty first: the program's, ``std`` (NVRTC may have no std of its own) and
    those of headers hfuse does not read (a kept library's, ``cute``, or a dropped host
    header's), whatever the file's includes bring; the CUDA libraries' are there."""
    found = []
    for item in items:
        if item.kind == "using" and item.nominates:
            key = program.resolver.namespace(item.scope, item.nominates)
            if key and key.split("::")[0] not in DEVICE_NAMESPACES:
                found.append(tuple(key.split("::")))
    return list(dict.fromkeys(found))
