"""What one part of a fusion request needs beyond its code, and checks of the whole fusion.

Each part's kernel instance gives integer template constants (``kTile`` = 32), the types
it has its own renamed copy of (``Params__hf2``), and the alignment its slice of dynamic
shared memory must start on; its integer constants, Clang asked for what hfuse cannot
evaluate. The checks refuse, with where and why, what would not compile or could be wrong:
a type both inputs share that names a type each part renames, static shared memory beyond
what one kernel may declare, a device variable two parts would use at once, and a name
whose definitions the inputs disagree on.
"""
from __future__ import annotations

import itertools
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

from .errors import HFuseError, Location
from .frontend.clang_constants import ask_clang
from .frontend.closure import device_closure
from .frontend.model import Function, SourceFile, TopLevelItem, scope_names
from .frontend.options import CompileOptions
from .frontend.program import Program, is_device_variable, is_shared_variable
from .spec import KernelSpec
from .transform.analysis import BY_ARGUMENTS, FunctionFacts, ProgramFacts
from .transform.context import HelperConstant
from .transform.device_state import device_state_uses, mutable_static_locals, refuse_shared_device_state
from .transform.early_exit import functions_of, make_early_exits_safe
from .transform.instance_constants import constant_questions, helper_questions, template_constants
from .transform.opaque import REFUSAL_HINT, WHOLE_BLOCK_HINT, OpaqueNames
from .transform.shared_memory import slice_alignment
from .transform.static_shared import static_shared_bytes


def check_shared_types(closure: Sequence[TopLevelItem], program: Program, clashes: Mapping[str, Any],
                       specs: Sequence[KernelSpec]) -> None:
    """A type both inputs share (one definition, emitted once) may not name a type each
    part has its own copy of: which copy would it mean?"""
    renamed = {key for key, owners in clashes.items() if not any(is_device_variable(i) for i in owners.values())}
    if not renamed:
        return
    for item in closure:
        if item.function is not None or item.kind != "declaration" or set(item.keys) & set(clashes):
            continue
        named = {program.resolver.resolve(item.scope, r) for r in item.references} & renamed
        if named:
            owner = next((s.name for s in specs if s.file == item.file), None)
            shared = sum(1 for f in program.files if any(set(i.keys) & set(item.keys) for i in f.items)) > 1
            what = "is the same in the inputs but" if shared else "(a template, or in a namespace: emitted once)"
            raise HFuseError(
                f"'{item.keys[0] if item.keys else item.text.splitlines()[0]}' {what} names "
                f"'{sorted(named)[0]}', which the inputs define differently (each part gets its own copy of that)",
                Location(item.file, item.line, owner),
                hint="rename the type in one of the files, or make both definitions identical")


STATIC_SHARED_LIMIT = 48 * 1024
"""Bytes of ``__shared__`` variables one kernel may declare (more only dynamically)."""


def check_static_shared(kernels: Sequence[tuple[KernelSpec, Function, ProgramFacts, Sequence[TopLevelItem]]]) -> None:
    """Refuse, with the parts' sizes, a fused kernel whose static shared memory ptxas would
    refuse ("uses too much shared data"). Every part's variables live in the one fused
    kernel, whatever the layout; a helper several parts share is counted once, one each
    part has its own copy of (and file-scope ``__shared__`` variables) once per part. Where a
    size is not known here (a struct, an extent hfuse cannot evaluate) ptxas has the word."""
    sizes, counted = [], set()
    for spec, kernel, facts, symbols in kernels:
        own = 0
        for item in symbols:  # its own copies of file-scope __shared__ variables
            found = static_shared_bytes(item.text) if is_shared_variable(item) else 0
            if found is None:
                return
            own += found
        constants = dict(template_constants(kernel, spec.template_args))
        for name in facts.reachable(kernel.key):
            shared = name not in facts.needs_context and name != kernel.key
            if shared and name in counted:
                continue
            counted.add(name)
            for f in facts.facts[name]:
                found = static_shared_bytes(f.function.text, constants if name == kernel.key else None)
                if found is None:
                    return
                own += found
        sizes.append((spec, kernel, own))
    total = sum(size for _, _, size in sizes)
    if total <= STATIC_SHARED_LIMIT:
        return
    spec, largest, _ = max(sizes, key=lambda found: found[2])
    parts = ", ".join(f"{s.name}: {size} B" for s, _, size in sizes)
    raise HFuseError(
        f"the parts' static shared memory adds up to {total} bytes ({parts}), above the {STATIC_SHARED_LIMIT} a "
        "kernel may declare statically: ptxas would refuse the fused file",
        Location(largest.file, largest.line, spec.name),
        hint="declare the largest arrays extern __shared__ (dynamic shared memory may reach 227 KiB per block on "
        "an H100), or fuse fewer kernels")


def slice_alignment_of(program: Program, kernel: Function, facts: ProgramFacts) -> int:
    """What the kernel's ``extern __shared__`` arrays ask of its slice's start (at least 16)."""
    texts = [f.function.text for name in facts.reachable(kernel.key) for f in facts.facts[name]]
    texts += [i.text for i in program.items if i.kind == "declaration" and i.file == kernel.file]
    return slice_alignment(texts)


def renamed_types(symbols: Sequence[TopLevelItem], index: int) -> dict[str, str]:
    """The types and constants this part has its own copy of (plain name -> renamed), for
    its kernel's parameters (``Params p`` of a file whose ``Params`` another file defines
    differently is ``Params__hf2 hf2_p``)."""
    return {key.split("::")[-1]: f"{key.split('::')[-1]}__hf{index}"
            for item in symbols if not is_device_variable(item) and not is_shared_variable(item) for key in item.keys}


def check_members_agree(item: TopLevelItem, program: Program, kernel: str) -> None:
    """Refuse a class both inputs write alike whose members defined outside it differ
    (``__device__ void Acc::add(float v) {...}`` twice): each part would need its own copy of
    the class for its own members, and hfuse copies a class with the members written in it."""
    differ = sorted(m.key for m in item.members if m.key in program.function_clashes)
    if differ:
        raise HFuseError(
            f"'{', '.join(item.names)}' is one class in the inputs, but its member {', '.join(differ)} is defined "
            "differently in each (outside the class): hfuse cannot give each part its own copy of the class",
            Location(item.file, item.line, kernel),
            hint="define the members inside the class, or rename the class in one file")


def check_disagreements(specs: Sequence[KernelSpec], found: Sequence[Function], program: Program) -> None:
    """Refuse a kernel that uses a name of which another input has definitions its file lacks."""
    for name, lacks in program.disagreements.items():
        if name in program.function_clashes:
            continue  # each part calls among its own file's definitions, renamed per part
        for (missing, lacking), (spec, kernel) in itertools.product(lacks, zip(specs, found)):
            if spec.file != lacking:
                continue
            closure = device_closure(program, [kernel], [spec.template_args])
            plain = name.split("::")[-1]
            # (not a member's name, ``x.f``, nor a literal's suffix, ``2.f``)
            named = not plain.startswith("operator") and re.search(rf"(?<![\w.]){re.escape(plain)}\b", kernel.text)
            if any(name in item.keys for item in closure.items) or named:
                head = " ".join(missing.text.split("{")[0].split())[:90]
                raise HFuseError(
                    f"{missing.file}:{missing.line} defines '{name}' once more ({head}), and {lacking.name}, whose "
                    f"kernel '{spec.name}' uses '{name}', does not: compiled apart its code chose among its own "
                    "definitions; in one fused file an explicit specialisation or overload of the other would change "
                    "what it calls",
                    Location(spec.file, kernel.line, spec.name),
                    hint="give both files the same definitions (one shared header), or rename it in one file",
                )


@dataclass(frozen=True)
class DeviceState:
    """What the parts do with device variables, for verification."""

    written: tuple[tuple[str, ...], ...] = ()
    """Per kernel, in order: the ``__device__`` variables it may write (keys, as the source
    qualifies them). Verification compares each after the run, as it does the arrays."""
    notes: tuple[str, ...] = ()
    """What verification cannot compare (``__managed__`` variables), one note each."""


_MANAGED = re.compile(r"(?<!\w)__managed__(?!\w)")
_CONSTANT = re.compile(r"(?<!\w)__constant__(?!\w)")  # read-only in device code: nothing to compare


def check_device_state(kernels: Sequence[tuple[KernelSpec, Function, ProgramFacts]], program: Program,
                       per_part: frozenset[str]) -> DeviceState:
    """Refuse parts that would use one written device variable at once (``device_state.py``);
    and which device variables each part writes. A ``__managed__`` one gets a note instead:
    verification reads ``__device__`` variables from the compiled module, not managed memory."""
    _refuse_shared_static_locals(kernels)
    definitions = {key: next(iter(owners.values())) for key, owners in program.symbols.items()
                   if any(is_device_variable(i) for i in owners.values())}
    if not definitions:
        return DeviceState(((),) * len(kernels))
    addresses = {key: "[" in item.text.split("=")[0] or "*" in item.text.split("=")[0] for key, item in definitions.items()}
    uses = [(spec, device_state_uses([f.function for key in facts.reachable(kernel.key) for f in facts.facts[key]],
                                     addresses, program.resolver)) for spec, kernel, facts in kernels]
    shared = {key: item for key, item in definitions.items() if key not in per_part}
    refuse_shared_device_state([(spec, [u for u in found if u.key in shared]) for spec, found in uses], shared)
    managed = {key for key, item in definitions.items() if _MANAGED.search(item.text.split("=")[0])}
    constant = {key for key, item in definitions.items() if _CONSTANT.search(item.text.split("=")[0])}
    written = tuple(tuple(dict.fromkeys(u.key for u in found if u.writes and u.key not in managed | constant))
                    for _, found in uses)
    notes = tuple(dict.fromkeys(
        f"note: {spec.name} writes the __managed__ variable '{use.key}' ({use.function.file.name}:{use.line}); hfuse's "
        "verification (--verify, hfuse tune) compares arrays and __device__ variables, not managed memory: check "
        "that one yourself" for spec, found in uses for use in found if use.writes and use.key in managed))
    return DeviceState(written, notes)


def check_using_directives(kernels: Sequence[tuple[KernelSpec, Function, ProgramFacts]], program: Program) -> None:
    """Refuse an unqualified call that a file-scope ``using namespace N;`` makes an overload
    set: N (an input's namespace) defines a function of its name, and so does the global
    namespace or another nominated one. C++ chooses among them by the arguments' types,
    which hfuse does not know (it would keep one, or both where the other input's code needs
    the global one). Once, hfuse kept the global function alone and the part computed with
    it, silently. (Code that never saw the directive is written before it:
    ``codegen/directive_scope.py``.)"""
    directives = [(item, program.resolver.namespace(item.scope, item.nominates)) for item in program.items
                  if item.kind == "using" and item.nominates and not item.keys  # (an alias names itself)
                  and not scope_names(item.scope)]
    if not directives:
        return
    functions = {key for item in program.items if item.function is not None for key in item.keys}
    members: dict[str, set[str]] = {}
    for _, namespace in directives:
        for key in functions:
            if namespace and key.rpartition("::")[0] == namespace:
                members.setdefault(key.rpartition("::")[2], set()).add(key)
    for spec, kernel, facts in kernels:
        reached = {id(f.function) for key in facts.reachable(kernel.key) for f in facts.facts[key]}
        for item in program.items:
            if item.function is None or id(item.function) not in reached:
                continue
            own = {key.rpartition("::")[2] for key in item.keys}  # (a definition names itself)
            for name in sorted(n for n in item.references if n in members and n not in own):
                candidates = members[name] | ({name} & functions)
                if len(candidates) < 2:
                    continue
                directive, namespace = next((d, n) for d, n in directives if f"{n}::{name}" in candidates)
                raise HFuseError(
                    f"'{name}' in {spec.name}'s code may call {' or '.join(sorted(candidates))}: "
                    f"'using namespace {directive.nominates};' ({directive.file.name}:{directive.line}) makes "
                    f"{namespace}'s functions candidates for every unqualified call in the fused file, and C++ "
                    "chooses among them by the arguments' types, which hfuse does not know",
                    Location(item.function.file, item.function.line, spec.name),
                    hint=f"qualify the call in your file (::{name} or {namespace}::{name}), or keep these kernels unfused")


def check_foreign_functions(kernels: Sequence[tuple[KernelSpec, Function, ProgramFacts]], program: Program) -> None:
    """Refuse a part whose calls reach a function only another input defines. Its own file
    compiled, so there the name was something else: a function of a header hfuse keeps
    (reached through ``using namespace``, argument-dependent lookup, or a global one), or a
    macro. In the fused file the other input's definition would join, and C++ would choose
    between them by the arguments' types: once, a ``twice(x)`` that meant a library's
    ``3 * x`` took the other file's ``2 * x``, silently."""
    for spec, kernel, facts in kernels:
        source = next((f for f in program.files if f.path == spec.file), None)
        if source is None:
            continue
        own = {key for item in source.items for key in (*item.keys, *(m.key for m in item.members),
                                                          *((item.function.key,) if item.function else ()))}
        reached = _reachable_from_source(facts, kernel.key, program, spec.file)
        for key in reached:
            defined = next(f.function for f in facts.facts[key])
            if key in own or key == kernel.key or defined.owner:
                continue  # (a member: the part's object's class has it; its own copy, where the inputs differ)
            caller = next((f.function for k in reached if k in own or k == kernel.key for f in facts.facts[k]
                           if key in f.calls), kernel)
            raise HFuseError(
                f"{spec.name}'s code calls '{key}', which {spec.file.name} does not define, but another input does "
                f"({defined.file.name}:{defined.line}): compiled apart the call meant another declaration (a kept "
                "header's, one a using-declaration brings, or one found by its arguments' types), and in the fused "
                "file both would be candidates, chosen between by the arguments' types",
                Location(caller.file, caller.line, spec.name),
                hint=f"rename the other input's '{key.rpartition('::')[2]}', or keep these kernels unfused")
        # (argument-dependent lookup searches only the namespaces of the arguments' types: ones
        # this file declares something in; another input's own namespace it cannot reach)
        spaces = {"::".join(scope_names(item.scope)) for item in source.items}
        for f in (f for k in reached if k in own or k == kernel.key for f in facts.facts[k]):
            for key, others, line, how in f.other_candidates:
                if how != BY_ARGUMENTS:
                    continue  # (a using-declaration's: what it brings is its file's to say)
                if foreign := [o for o in others if o not in own and (o.rpartition("::")[0] in spaces)]:
                    # (argument-dependent lookup: once, a's mag(v) took b's geo::mag(V) over its own template)
                    raise HFuseError(
                        f"the call of '{key.rpartition('::')[2]}' may also find {', '.join(foreign)} by "
                        f"argument-dependent lookup (the namespace of an argument's type), which only another input "
                        f"defines: compiled apart {spec.file.name} never saw it, and in the fused file C++ may choose "
                        "it by the arguments' types",
                        Location(f.function.file, line, spec.name),
                        hint=f"qualify the call ({key if '::' in key else '::' + key}(...)), or rename the other "
                             "input's function, or keep these kernels unfused")


def _reachable_from_source(facts: ProgramFacts, root: str, program: Program, source: Path) -> list[str]:
    """What ``root`` reaches, following of a name two inputs define differently (each part
    gets its own file's set) only ``source``'s definitions: once, a part's 'mix' was taken to
    call what the other input's 'mix' calls."""
    def own(name: str, f: FunctionFacts) -> bool:
        mine = program.function_clashes.get(name, {}).get(source)
        return mine is None or any(f.function is item.function for item in mine)
    return facts.reachable(root, own)


def _refuse_shared_static_locals(kernels: Sequence[tuple[KernelSpec, Function, ProgramFacts]]) -> None:
    """A helper two parts share (not copied per part) with a mutable ``static`` local: both
    would use the one variable at once, as two launches never did."""
    first_user: dict[str, int] = {}
    for index, (spec, kernel, facts) in enumerate(kernels):
        for key in facts.reachable(kernel.key):
            if key == kernel.key or key in facts.needs_context:
                continue  # the part's own copy
            statics = [(f.function, name, line) for f in facts.facts[key] for name, line in mutable_static_locals(f.function)]
            if not statics:
                continue
            if first_user.setdefault(key, index) != index:
                function, name, line = statics[0]
                raise HFuseError(
                    f"'{key}' keeps a static variable '{name}' that both '{kernels[first_user[key]][0].name}' and "
                    f"'{spec.name}' would use at once in the fused kernel: compiled apart one launch finished before "
                    "the other began",
                    Location(function.file, line, spec.name),
                    hint="make it a parameter or a __device__ variable per kernel, or keep these kernels unfused")


def instance_constants(specs: Sequence[KernelSpec], found: Sequence[Function], files: Sequence[SourceFile],
                       sources: Mapping[str | Path, str] | None, options: CompileOptions, facts: ProgramFacts,
                       ) -> list[tuple[tuple[tuple[str, int], ...], tuple[HelperConstant, ...]]]:
    """Each instance's integer constants, and those of the helpers it calls (file, line, text,
    value), Clang asked for what hfuse's evaluator cannot tell."""
    given = {str(k): v for k, v in (sources or {}).items()}
    kept = {f.path: f.kept_preamble for f in files}
    out = []
    for spec, kernel in zip(specs, found):
        asked = constant_questions(kernel, spec.template_args)
        helpers = [(f.function, text, question) for key in facts.reachable(kernel.key) if key != kernel.key
                   for f in facts.facts[key] for text, question in helper_questions(f.function, kernel.file)]
        answers = ask_clang([q for _, q in asked] + [q for _, _, q in helpers], spec.options or options,
                            kept[spec.file], given)
        mine = template_constants(kernel, spec.template_args) + tuple(
            ("".join(text.split()), value) for (text, _), value in zip(asked, answers) if value is not None)
        theirs = tuple((str(h.file), h.line, "".join(text.split()), value)
                       for (h, text, _), value in zip(helpers, answers[len(asked):]) if value is not None)
        out.append((mine, theirs))
    return out


def check_function_arguments(spec: KernelSpec, kernel: Function, program: Program, needs_context: set[str]) -> None:
    """Refuse an instance whose template argument is a function that reads the block
    (``map<lane_scale>``): the part would call the original through the parameter."""
    known = set(program.functions)
    for argument in spec.template_args:
        key = program.resolver.resolve(kernel.scope, argument.strip().lstrip("&").strip(), known=known)
        if key is not None and key in needs_context:
            raise HFuseError(
                f"cannot prove the fused kernel correct: its template argument '{argument}' is a function that reads "
                "the block; each part calls its own copy of such a function, which a template parameter cannot name",
                Location(kernel.file, kernel.line, spec.name),
                hint="instantiate it with a function that does not read the block, or keep this kernel unfused")


def check_parameter_calls(spec: KernelSpec, kernel: Function, facts: ProgramFacts, program: Program) -> None:
    """Refuse a kernel template fused as a template (no template arguments given) whose code
    calls through a template type parameter (``f(x)`` of ``template <class F> k(F f)``): the
    fused kernel's caller picks the type, whose code reads the block unseen, and a functor of
    the user's file would be the original, not the part's copy that takes its view of the block.
    The hint names the instances the file itself launches or instantiates."""
    if not kernel.is_template or spec.template_args:
        return
    found = next((f.parameter_calls[0] + (f,) for key in _reachable_through_templates(facts, kernel.key)
                  for f in facts.facts[key] if f.parameter_calls), None)
    if found is None:
        return
    parameter, line, where = found
    written = re.compile(rf"\b{re.escape(kernel.name)}\s*<([^;{{}}]*?)>\s*(?:<<<|\()")
    instances = list(dict.fromkeys(" ".join(m.group(1).split()) for item in program.items
                                   if item.file == kernel.file and item.function is not kernel
                                   for m in written.finditer(item.text)))
    example = f"<{instances[0]}>" if instances else "<...>"
    seen = f" (the file has {', '.join(f'<{i}>' for i in instances[:3])})" if instances else ""
    raise HFuseError(
        f"cannot prove the fused kernel correct: a call through template parameter '{parameter}' with no "
        "template arguments given: what runs is what the fused kernel's caller gives it (a type's code, a "
        "function), which hfuse cannot see (it may read threadIdx or synchronise the block)",
        Location(where.function.file, line, spec.name),
        hint=f"give the kernel's template arguments (-k '{spec.name}{example}:{spec.block}'){seen}: "
        "hfuse then reads the instance")


def _reachable_through_templates(facts: ProgramFacts, root: str) -> list[str]:
    """What ``root`` reaches through templates: a free function that is no template calls with
    its own, fixed arguments (``block_reduce<warp_max>(v)``), whatever the kernel's are, and
    the instances it makes are read as any other code is. (A class's member may be a
    template's: followed.)"""
    return facts.reachable(root, lambda name, f: name == root or f.function.is_template or bool(f.function.owner))


def check_free_operators(closure: Sequence[TopLevelItem], needs_context: set[str], specs: Sequence[KernelSpec],
                         program: Program) -> None:
    """Refuse a free operator that reads the block (``operator*(F, float)`` reading
    ``threadIdx``): operators are called without their names, with a fixed number of
    operands, so no call can be sent to a part's copy that takes the part's view of the block.
    (A member operator is fine: its object carries that view, ``transform/context_types.py``.)
    And two inputs' free operators of one symbol that may take the same operand type."""
    _refuse_overlapping_operators(closure, program)
    for item in closure:
        fn = item.function
        if fn is not None and not fn.owner and fn.name.startswith("operator") and fn.key in needs_context:
            raise HFuseError(
                f"cannot prove the fused kernel correct: '{fn.name}' reads the block (or calls what does), and an "
                "operator cannot be given a part's view of the fused block",
                Location(fn.file, fn.line, next((s.name for s in specs if s.file == item.file), None)),
                hint="read threadIdx/blockIdx where the operator is used and pass the value in, make it a member "
                "operator, or keep this kernel unfused")


def _refuse_overlapping_operators(closure: Sequence[TopLevelItem], program: Program) -> None:
    """Two inputs' free operators of one symbol (``operator*``) whose operands may be of one type
    (a template's parameter may be any): compiled apart each file's ``v * 2.f`` saw its own; in
    the fused file both are candidates (the other's found by argument-dependent lookup), and
    C++ chooses by conversions: once, a file's template ``operator*(T, float)`` lost to the
    other file's ``geo::operator*(V, float)``, silently."""
    kept = {id(item) for item in closure}
    seen: dict[str, tuple[Function, frozenset[str] | None, Path]] = {}
    for source in program.files:
        for item in source.items:
            fn = item.function
            if fn is None or fn.owner or not fn.name.startswith("operator") or fn.kind == "global":
                continue
            if id(item) not in kept and not any(i.text == item.text for i in closure):
                continue
            operands = _operand_types(fn)
            previous = seen.setdefault(fn.name, (fn, operands, source.path))
            other, others, path = previous
            if path == source.path or other.text == fn.text:
                continue
            if operands is None or others is None or operands & others:
                raise HFuseError(
                    f"'{fn.name}' is defined by {source.path.name} ({fn.file.name}:{fn.line}) and by {path.name} "
                    f"({other.file.name}:{other.line}) for operands that may be of one type: compiled apart each "
                    "file's code saw its own, and in the fused file C++ would choose between them",
                    Location(fn.file, fn.line),
                    hint="give both files the same operator (one shared header), or keep these kernels unfused")


def _operand_types(fn: Function) -> frozenset[str] | None:
    """The operands' type names (``geo::V`` and ``const V&`` are ``V``); None where one is a
    template parameter, which may be any type."""
    params = set(fn.template_params)
    names = set()
    for param in fn.params:
        text = param.declaration
        if param.name and param.name_start >= 0:
            text = text[:param.name_start] + text[param.name_start + len(param.name):]
        words = re.findall(r"[A-Za-z_]\w*", re.sub(r"\b(?:const|volatile|__restrict__|struct|class)\b", " ", text))
        if not words:
            continue
        if words[-1] in params:
            return None
        names.add(words[-1])
    return frozenset(names - _FUNDAMENTAL)  # (an operator needs an operand of a class or enum type)


_FUNDAMENTAL = frozenset({"bool", "char", "short", "int", "long", "signed", "unsigned", "float", "double", "void",
                          "size_t", "int8_t", "int16_t", "int32_t", "int64_t", "uint8_t", "uint16_t", "uint32_t",
                          "uint64_t"})


_NOT_A_VARIABLE = re.compile(r"\s*(?:template|typedef|using|struct|class|union|enum|namespace)\b")
_NAME = re.compile(r"[A-Za-z_][\w:]*")


def check_stored_functions(closure: Sequence[TopLevelItem], needs_context: set[str], specs: Sequence[KernelSpec],
                           program: Program) -> None:
    """Refuse a variable that holds a function reading the block (``__device__ binop_t
    table[] = {add, lane_scale};``): a call through it runs the original, not the part's
    copy, and no pointer can carry the part's view of the block. (A function's own uses of
    such a value are refused by ``check_kernel``.)"""
    known = set(program.functions)
    for item in closure:
        if item.kind != "declaration" or item.function is not None or item.members or item.classes \
                or _NOT_A_VARIABLE.match(item.text):
            continue
        starts = [i for i in (item.text.find("="), item.text.find("{")) if i >= 0]
        written_in_value = set(_NAME.findall(item.text[min(starts):])) if starts else set()
        for written in sorted(item.references & written_in_value - set(item.names)):
            key = program.resolver.resolve(item.scope, written, known=known)
            if key is not None and key in needs_context:
                raise HFuseError(
                    f"cannot prove the fused kernel correct: '{', '.join(item.names)}' holds '{written}', a function "
                    "that reads the block: a call through it runs the original function, and no pointer can carry "
                    "a part's view of the fused block",
                    Location(item.file, item.line, next((s.name for s in specs if s.file == item.file), None)),
                    hint=f"call {written.rsplit('::', 1)[-1]}(...) directly, or keep this kernel unfused")


def address_taken(program: Program, facts: ProgramFacts) -> set[str]:
    """The program's functions whose address its device code takes: used as a value in a
    function (``&lane``, ``g(lane)``, ``apply<lane>``) or named in a variable's or class's
    initialiser (``__device__ op_t d_op = lane;``). A call through a pointer can run only
    these (hfuse emits each function that reads the block as per-part copies of other names)."""
    known = set(program.functions)
    taken = {key for fs in facts.facts.values() for f in fs for key, _ in f.function_values}
    for item in program.items:
        if item.function is not None or item.kind not in ("declaration", "other"):
            continue
        starts = [i for i in (item.text.find("="), item.text.find("{")) if i >= 0]
        written = set(_NAME.findall(item.text[min(starts):])) if starts else set()
        taken |= {key for name in item.references & written
                  if (key := program.resolver.resolve(item.scope, name, known=known)) is not None}
    return taken


def whole_block_need(spec: KernelSpec, kernel: Function, facts: ProgramFacts, opaque: OpaqueNames) -> HFuseError | None:
    """Why the kernel must run as one whole block of its own (only layouts that keep a block
    whole take it): CUB's block collectives in its code or its template arguments, or an
    early return that cannot be made safe where it shares a block. None: it may share one."""
    return (_template_arguments_need(spec, kernel, opaque) or _facts_need(spec, kernel, facts)
            or _early_exits_need(spec, kernel, facts))


def _template_arguments_need(spec: KernelSpec, kernel: Function, opaque: OpaqueNames) -> HFuseError | None:
    """A kernel instantiated with CUB's block-wide types reads the block through them: why
    it must run as a whole block, or an error where no layout can take it."""
    for argument in spec.template_args:
        for written in re.findall(r"(?:::)?[A-Za-z_]\w*(?:\s*::\s*[A-Za-z_]\w*)*", argument):
            found = opaque.reason(kernel.scope, written, unqualified="::" not in written)
            if found is None:
                continue
            error = HFuseError(f"its template argument '{argument}' is {found.why}",
                               Location(kernel.file, kernel.line, spec.name), hint=WHOLE_BLOCK_HINT)
            if not found.whole_block:
                raise HFuseError(f"cannot prove the fused kernel correct: {error.message}", error.where,
                                 hint=REFUSAL_HINT)
            return error
    return None


def _early_exits_need(spec: KernelSpec, kernel: Function, facts: ProgramFacts) -> HFuseError | None:
    """Why an early return before a barrier cannot be made safe where the kernel shares its
    block (named barriers: ``transform/early_exit``); a layout that runs each block of it alone
    keeps the returns as written (``partition.WHOLE_BLOCK_BARRIER``)."""
    helpers = functions_of(facts)
    for key in facts.reachable(kernel.key):
        if key not in facts.has_barrier:
            continue  # it reaches no barrier: nothing to make safe
        for f in facts.facts[key]:
            try:
                make_early_exits_safe(f.function.text, helpers, str(f.function.file), f.function.line - 1, spec.name,
                                      exits=key == kernel.key)
            except HFuseError as err:
                return err
    return None


def _facts_need(spec: KernelSpec, kernel: Function, facts: ProgramFacts) -> HFuseError | None:
    found = facts.whole_block(kernel.key)
    if found is None:
        return None
    why, where, line = found
    return HFuseError(why, Location(where.function.file, line, spec.name), hint=WHOLE_BLOCK_HINT)


def check_own_blocks(kernels: Sequence[tuple[KernelSpec, Function, ProgramFacts]], block_threads: int) -> None:
    """A kernel that reads ``blockDim`` where hfuse cannot rewrite it (a kept header's, PyTorch's
    ``BlockReduceSum``) runs only in a fused block of exactly its own size: the one-part-per-block
    layouts launch the largest of the parts' blocks, and the header counts that one. One that
    reads the thread's index so (``%tid``) needs a 1-D block: those layouts' fused block is."""
    for spec, kernel, facts in kernels:
        found = facts.own_block(kernel.key)
        if found is None and spec.block.rank > 1 and (flat := facts.flat_block(kernel.key)) is not None:
            why, where, line = flat
            raise HFuseError(f"cannot prove the fused kernel correct: {why}; where its block runs whole, the fused "
                             f"block is 1-D, so the thread's index it reads is not the one of its {spec.block} block",
                             Location(where.function.file, line, spec.name),
                             hint="give it a 1-D block (threadIdx.x alone), or keep it unfused")
        if found is None or ((spec.block.y, spec.block.z) == (1, 1) and spec.block.x == block_threads):
            continue
        why, where, line = found
        hint = ("give it a 1-D block at least as large as every other kernel's (the fused block is the largest), "
                "or keep it unfused")
        if spec.block.rank > 1:  # (its own threadIdx.y cannot be had in a 1-D block)
            hint = ("keep it unfused: these layouts launch a 1-D fused block, in which the header counts other "
                    f"threads than the {spec.block} block it was written for")
        raise HFuseError(f"cannot prove the fused kernel correct: {why}; the header counts the fused block, "
                         f"{block_threads} threads, which is not the kernel's own block of {spec.block}",
                         Location(where.function.file, line, spec.name), hint=hint)
