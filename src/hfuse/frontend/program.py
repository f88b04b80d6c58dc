"""Several source files seen as one translation unit, as the fused file will be."""
from __future__ import annotations

import difflib
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable, Mapping, Sequence

from ..errors import HFuseError, Location
from ..toolkit import installed_package_dir, pytorch_include_dirs
from .directive_names import exposed_to_directives
from .library_text import kernel_definition
from .model import Function, SourceFile, TopLevelItem
from .resolve import Resolver
from .specialisation import ArgumentsAlike, declared_primary, specialised
from .parse import compact

_EXTERN_SHARED = re.compile(r"^\s*extern\s+(?:__shared__\s+)(?P<type>[^;\[]*?)\s*(?P<name>\w+)\s*\[\s*\]\s*;\s*$", re.S)


_SPECIALISES_CLASS = re.compile(r"\s*template\s*<[^;{]*>\s*(?:struct|class|union)\s+[\w:]+\s*<")
_IDENTIFIER = re.compile(r"\b[A-Za-z_]\w*\b")
_ATTRIBUTE = re.compile(r"\b(?:alignas|__align__|__attribute__|__declspec)\s*\((?:[^()]|\((?:[^()]|\([^()]*\))*\))*\)")
"""An attribute with parentheses in a declaration's head: ``struct alignas(16) Vec``."""
_DEFINES_CLASS = re.compile(r"\s*(?:template\s*<[^;{]*>\s*)?(?:struct|class|union)\b[^;{]*\{")


def _normalised(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@dataclass
class Program:
    """The merged file-scope items of all inputs, deduplicated, with conflicts refused."""

    files: list[SourceFile]
    items: list[TopLevelItem] = field(default_factory=list)
    functions: dict[str, list[Function]] = field(default_factory=dict)
    """Device-side functions (helpers and member functions) by qualified name; overloads share one."""
    extern_shared: dict[str, str] = field(default_factory=dict)
    """File-scope ``extern __shared__`` arrays: name -> element type (the first source's)."""
    extern_shared_by_source: dict[Path, dict[str, str]] = field(default_factory=dict)
    """The same, by the source that declares them: two files may give one name two element
    types (``float smem[]``, ``int4 smem[]``), and each part's code means its own file's."""
    resolver: Resolver = field(default_factory=Resolver)
    symbols: dict[str, dict[Path, TopLevelItem]] = field(default_factory=dict)
    """What every part gets its own renamed copy of, by key, then by the source file that
    defines it: ``__constant__``/``__device__``/``__shared__`` variables (two sources that define one have
    two when compiled apart, each filled by its own host code), and types, typedefs and
    constants that two sources define differently under one name (each file's code meant
    its own)."""

    function_clashes: dict[str, dict[Path, list[TopLevelItem]]] = field(default_factory=dict)
    """Device functions that inputs define differently under one name, by the source file
    that defines them: compiled apart each file had its own, so every part gets a copy of
    its own file's (``api.prepare``), never one for both."""

    families: dict[str, dict[Path, list[TopLevelItem]]] = field(default_factory=dict)
    """Class templates that inputs define differently with their specialisations (CUDA
    samples' ``SharedMemory<T>``, ``SharedMemory<double>``): by source, the whole family as
    that source writes it, forward declarations included. ``symbols`` holds each source's
    first; each part gets a renamed copy of its own source's family, and its instances
    choose among exactly those, as compiled apart."""

    disagreements: dict[str, list[tuple[TopLevelItem, Path]]] = field(default_factory=dict)
    """Names several definitions of which (explicit specialisations, overloads) one input
    has and another lacks: for each input that lacks one, a definition it lacks. Compiled apart,
    that file's code chose among its own; in one fused file it would see the other's too
    (``api`` refuses where that file's kernels use the name)."""

    def extern_shared_of(self, source: Path) -> tuple[tuple[str, str], ...]:
        """The file-scope ``extern __shared__`` arrays as the code of ``source`` sees them."""
        return tuple({**self.extern_shared, **self.extern_shared_by_source.get(source, {})}.items())

    exposed: frozenset[str] = frozenset()
    """File-scope types and constants of one input renamed in its own part only, like a clash:
    those another input's using-directive may also bring (``directive_names``), and those that
    name what each part has its own copy of (``_own_what_names_own_copies``). In ``symbols``
    with their one owner."""

    def _own_what_names_own_copies(self, files: Sequence[SourceFile]) -> None:
        """A file-scope type or constant of one input that names what each part has its own
        copy of (``typedef Vec16<act_t> act16;`` where two inputs define ``Vec16``) is that
        part's own too: emitted once, which part's copy would it name?"""
        grew = True
        while grew:
            grew = False
            per_part = self.clashing_symbols()
            for source in files:
                own = {name for name, owners in per_part.items() if source.path in owners}
                for item in source.items if own else ():
                    if (item.scope or not item.device or not item.keys or not _renamable(item)
                            or item.text.lstrip().startswith("template")
                            or all(source.path in self.symbols.get(name, {}) for name in item.keys)):
                        continue
                    if own & set(_IDENTIFIER.findall(item.text)):  # (one text two inputs share: a copy each)
                        for name in item.keys:
                            self.symbols.setdefault(name, {})[source.path] = item
                        self.exposed |= set(item.keys)
                        grew = True

    def clashing_symbols(self) -> dict[str, dict[Path, TopLevelItem]]:
        """What every part gets its own copy of: what two sources define, file-scope
        ``__shared__`` variables (one source's, used by two parts, would be shared by them),
        and what another input's using-directive may make ambiguous (``exposed``)."""
        return {key: owners for key, owners in self.symbols.items()
                if len(owners) > 1 or key in self.exposed or any(is_shared_variable(item) for item in owners.values())}

    @classmethod
    def merge(cls, files: list[SourceFile]) -> "Program":
        program = cls(files=files)
        seen_text: set[tuple] = set()
        owner: dict[str, tuple[TopLevelItem, Path]] = {}
        definitions: dict[str, dict[Path, dict[str, TopLevelItem]]] = {}
        for source in files:
            for item in source.items:
                fn = item.function
                extern = _EXTERN_SHARED.match(item.text) if item.kind == "declaration" else None
                if extern:  # (no symbol to rename: every part's uses become its own slice)
                    element = extern.group("type").strip()
                    program.extern_shared.setdefault(extern.group("name"), element)
                    program.extern_shared_by_source.setdefault(source.path, {})[extern.group("name")] = element
                symbol = is_device_variable(item) or is_shared_variable(item)
                if item.device and not symbol and not is_prototype(item) and (fn is None or fn.kind != "global"):
                    for name in item.keys:
                        definitions.setdefault(name, {}).setdefault(source.path, {})[_normalised(item.text)] = item
                key = (item.scope, _normalised(item.text), source.path if symbol else None)
                if key in seen_text:
                    continue  # the same definition in two files (or a header read twice) appears once
                seen_text.add(key)
                if symbol:
                    for name in item.keys:
                        program.symbols.setdefault(name, {})[source.path] = item
                elif item.device and (fn is None or fn.kind != "global") and not extern:  # kernels: regenerated
                    for name in item.keys:
                        program._claim(owner, name, item, source.path)
                program.items.append(item)
                if fn is not None and fn.kind == "device":
                    program.functions.setdefault(fn.key, []).append(fn)
                for member in item.members:
                    if member.kind != "host" and not member.defined_outside:  # (that one's own item adds it)
                        program.functions.setdefault(member.key, []).append(member)
        program.disagreements = _disagreements(definitions)
        for name, owners in exposed_to_directives(files, _renamable).items():
            if name not in program.symbols and name not in program.function_clashes:
                program.symbols[name] = dict(owners)
                program.exposed |= {name}
        for name in list(program.disagreements):
            family = _class_family(name, files, definitions[name])
            if family is not None:  # (a class template's family two sources write differently: one per part)
                program.families[name] = family
                program.symbols[name] = {path: items[0] for path, items in family.items()}
                del program.disagreements[name]
                continue
            # overloads, templates and specialisations one file has and another lacks: a set per part, as for a clash
            every = [item for texts in definitions[name].values() for item in texts.values()]
            if all(i.function is not None and not i.function.owner for i in every):
                program.function_clashes.setdefault(name, {})
                del program.disagreements[name]
        program._own_what_names_own_copies(files)
        for name, by_source in program.function_clashes.items():
            # each source's whole set of definitions of the name, those it shares with another
            # source included (read once above): its part calls among exactly its own, as compiled apart
            for path, texts in definitions.get(name, {}).items():
                by_source[path] = [item for item in texts.values() if item.function is not None]
        kernels = [f.key for s in files for f in s.functions if f.kind == "global"]
        program.resolver = Resolver.of(program.items, [*program.functions, *kernels])
        program.resolver.value_macros = frozenset(key.split("(")[0] for f in files for key, _ in f.value_macros)
        declared = {key for item in program.items if is_prototype(item) and "(" in item.text
                    and re.search(r"\b__device__\b", item.text) for key in item.keys}
        defined = set(program.functions) | set(kernels) | {f.key for s in files for f in s.functions}
        program.resolver.undefined_device_functions = frozenset(declared - defined)
        return program

    def _claim(self, owner: dict[str, tuple[TopLevelItem, Path]], name: str, item: TopLevelItem, source: Path) -> None:
        previous, previous_source = owner.setdefault(name, (item, source))
        if previous is not item and is_prototype(previous) and not is_prototype(item):
            # a forward declaration claims nothing: the definition does (once, traits.cu's 'struct
            # Params;' hid that another input defined Params differently, and both were emitted)
            owner[name] = (item, source)
            previous, previous_source = owner[name]
        if previous is item or previous_source == source:
            # overloads, specialisations and redeclarations within one source are the
            # compiler's business, in its headers and itself alike (a header's template, the
            # .cu's explicit specialisation of it): that source compiled
            return
        # (one header, read by two sources with other macros, may define a name two ways: as two files would)
        if is_prototype(previous) or is_prototype(item):
            return  # a declaration beside its definition
        if previous.function is not None and item.function is not None and previous_source != source:
            by_source = self.function_clashes.setdefault(name, {})
            for clashing, path in ((previous, previous_source), (item, source)):
                if clashing not in by_source.setdefault(path, []):
                    by_source[path].append(clashing)
            return
        if previous_source != source and any(_SPECIALISES_CLASS.match(i.text) for i in (previous, item)):
            return  # a class template's family: inputs that disagree on it are refused where used (disagreements)
        if previous_source != source and _renamable(previous) and _renamable(item):
            owners = self.symbols.setdefault(name, {})
            owners.setdefault(previous_source, previous)
            owners.setdefault(source, item)
            return
        raise HFuseError(
            f"'{name}' is defined differently here and in {previous.file}:{previous.line}",
            Location(item.file, item.line),
            hint="rename one of them, or make both definitions identical",
        )

    def kernel(self, name: str, file: Path, template_args: Sequence[str] = (),
               overload: OverloadChoice | None = None, line: int | None = None,
               alike: ArgumentsAlike | None = None) -> Function:
        """The ``__global__`` function ``name`` (plain or qualified) of ``file``, or a clear error.

        Kernels that share a name (overloads) are told apart by the template arguments they
        accept (their number, defaults and packs); where several accept them, ``overload``
        (a C++ compiler's overload resolution, SFINAE included) says which one the instance
        is; ``line`` (where a definition starts) picks one that differ only in their parameters;
        where nothing singles one out, hfuse refuses rather than pick. An explicit
        specialisation for ``template_args`` is what that instance runs (``specialisation.py``),
        also of a template only declared (``declared_primary``), whose other instances are refused;
        ``alike`` (a C++ compiler) compares the arguments hfuse cannot (``float``, ``at::Half``)."""
        source = next((s for s in self.files if s.path == file), None)
        assert source is not None, file
        primary = self._kernel_of(source, name, template_args, overload, line)
        if any(f is primary for f in source.functions):
            return specialised(primary, source.functions, template_args, alike)
        # a prototype's: its instances are its explicit specialisations, and it has no body of its own
        chosen = specialised(primary, source.functions, template_args, alike) if template_args else primary
        if chosen is primary:
            defined = [f.name for f in source.functions if f.is_explicit_specialisation and f.key.split("<")[0] == primary.key]
            raise HFuseError(f"'{name}' is only declared at line {primary.line}; of its explicit specialisations "
                             f"({', '.join(defined) or 'none'}) none is for <{', '.join(template_args)}>",
                             Location(file, primary.line, name),
                             hint="give the template arguments of one of its specialisations (-k 'NAME<ARGS>:BLOCK')")
        return chosen

    def template_prototypes(self) -> dict[str, TopLevelItem]:
        """The prototypes of function templates, by key (``template <ReduceType R, int N>
        __device__ void blockReduce(float*);``, whose instances may be explicit specialisations only)."""
        return {key: item for item in self.items if is_prototype(item) and item.text.lstrip().startswith("template")
                and not re.match(r"template\s*<\s*>", item.text.lstrip()) for key in item.keys}

    def kernel_item(self, function: Function) -> TopLevelItem:
        """The item of ``function``, a kernel ``kernel`` returned (an explicit specialisation's own)."""
        return next(i for i in self._kernel_items(function)
                    if i.function is function or i.function.line == function.line)

    def primary_items(self, item: TopLevelItem) -> list[TopLevelItem]:
        """Where ``item`` is an explicit specialisation of a kernel template, the items that
        declare the template: its definition, or the prototype of a template only declared."""
        if item.function is None or not item.function.is_explicit_specialisation:
            return []
        key = item.function.key.split("<")[0].strip()
        return [i for i in self._kernel_items(item.function) if i.function.is_template
                and not i.function.is_explicit_specialisation] or [
            i for i in self.items if i.file == item.file and (p := declared_primary(i)) is not None and p.key == key]

    def _kernel_items(self, function: Function) -> list[TopLevelItem]:
        key = function.key.split("<")[0].strip()
        return [i for i in self.items if i.function is not None and i.function.kind == "global"
                and i.function.file == function.file and i.function.key.split("<")[0].strip() == key]

    def _kernel_of(self, source: SourceFile, name: str, template_args: Sequence[str],
                   overload: OverloadChoice | None, line: int | None = None) -> Function:
        file = source.path
        kernels = source.kernels
        wanted = compact(name.lstrip(":"))
        overloads = [f for f in source.functions if f.kind == "global" and wanted in (f.key, f.key.split("::")[-1])
                     and not f.is_explicit_specialisation]
        declared = [p for item in source.items if (p := declared_primary(item)) is not None
                    and wanted in (p.key, p.key.split("::")[-1])] if not overloads else []
        if len(declared) == 1 and (line is None or declared[0].line <= line <= declared[0].line + declared[0].text.count("\n")):
            return declared[0]  # a template only declared, its instances explicit specialisations
        if line is not None:
            at_line = [f for f in overloads if f.line <= line <= f.line + f.text.count("\n")]
            if len(at_line) != 1:
                listed = ", ".join(str(f.line) for f in overloads) or "none"
                raise HFuseError(f"no kernel named '{name}' is defined at line {line} of {file.name} (kernels of "
                                 f"that name start at lines: {listed})", Location(file, line, name),
                                 hint="give the line the kernel's definition starts on (-k 'NAME@LINE:BLOCK')")
            return at_line[0]
        if len({f.key for f in overloads}) == 1 and len(overloads) > 1:
            fitting = [f for f in overloads if _accepts(f, len(template_args))]
            if overload is not None and template_args and len(fitting) > 1:
                return overload(fitting)
            if len(fitting) != 1:
                raise HFuseError(
                    f"'{name}' names {len(overloads)} kernels of one name (lines "
                    f"{', '.join(str(f.line) for f in overloads)}), and {len(fitting) or 'none'} of them take "
                    f"{len(template_args)} template argument(s)",
                    Location(file, overloads[0].line, name),
                    hint="hfuse picks an overload by the template arguments it accepts (and, where several do, as "
                         "the compiler would); give them (-k 'NAME<...>:BLOCK'), or the line of the one you mean "
                         f"(-k '{name}@{overloads[-1].line}:BLOCK')",
                )
            return fitting[0]
        if wanted in kernels:
            return kernels[wanted]
        by_plain = [f for key, f in kernels.items() if key.split("::")[-1] == wanted]
        if len(by_plain) == 1:
            return by_plain[0]
        if len(by_plain) > 1:
            raise HFuseError(
                f"'{name}' names {len(by_plain)} kernels: {', '.join(sorted(f.key for f in by_plain))}",
                Location(file, None, name),
                hint="select one by its qualified name, e.g. -k " + by_plain[0].key + ":256",
            )
        helpers = [f for f in source.functions if f.key == wanted or f.name == wanted]
        if helpers:
            hint = None
            if (macro := _unknown_macro_before(helpers[0])) is not None:
                hint = (f"its declaration says __global__, but '{macro}', which no header hfuse read defines, "
                        "stands before its name (a macro of a header that was not found?): give the folder that "
                        "has it with -I or -isystem, as your build does")
            raise HFuseError(
                f"'{name}' is a {helpers[0].kind} function, not a __global__ kernel",
                Location(helpers[0].file, helpers[0].line, name), hint=hint,
            )
        close = difflib.get_close_matches(wanted, list(kernels), n=3)
        known = ", ".join(sorted(kernels)) or "none"
        hint = f"did you mean {' or '.join(repr(c) for c in close)}?" if close else None
        unparsed = next((i for i in source.items if i.kind == "other" and re.search(rf"\b{re.escape(wanted.split('::')[-1])}\s*\(", i.text)), None)
        if unparsed is not None and unparsed.text.count("{") > unparsed.text.count("}"):
            hint = (f"{unparsed.file}:{unparsed.line} defines '{name}' but the file ends before its body closes "
                    "(a missing '}'): is the file truncated?")
        elif unparsed is not None:
            hint = (f"{unparsed.file}:{unparsed.line} mentions '{name}' in code hfuse could not parse; check that it "
                    "compiles with nvcc with the same -I/-D options")
        elif hint is None and (found := kernel_definition(wanted, source.kept_includes, source.library_dirs)):
            hint = _library_kernel_hint(name, *found, source.library_dirs)
        elif hint is None and (kept := [i for i in source.kept_includes if "<" in i and not _toolkit_header(i)]):
            hint = (f"if '{name}' is defined in a header hfuse keeps as an #include ({_header_name(kept[0])}"
                    f"{' and others' if len(kept) > 1 else ''}: a library's), give that header's folder with -I "
                    "instead of -isystem: hfuse fuses the kernels of the files it reads as your own (an -I folder "
                    "of another project, an installed package's or a third_party one, it keeps as a library's too)")
        raise HFuseError(f"no __global__ kernel named '{name}' (kernels in this file: {known})", Location(file, None, name), hint=hint)


def _library_kernel_hint(name: str, header: Path, line: int, library_dirs: Sequence[Path]) -> str:
    """Where a kernel the file lacks is defined in a library's header the file includes, and
    what makes hfuse read that header as the user's own."""
    folder = next(d for d in library_dirs if header.is_relative_to(d))
    where = f"'{name}' is defined at {header}:{line}, in a header hfuse keeps as an #include (a library's, found in {folder})"
    if installed_package_dir(folder) or folder in pytorch_include_dirs():
        return (f"{where}: an installed package's headers are never read as your own; to fuse that kernel, "
                "copy its definition into a file of yours")
    return (f"{where}: hfuse fuses only the kernels of files it reads as your own; give that folder with "
            f"-I {folder} instead of -isystem (a folder of a vendored or another checkout's project stays a "
            "library's: copy the kernel into a file of yours)")


def _header_name(include: str) -> str:
    return include.split("<", 1)[1].split(">", 1)[0].strip()


def _toolkit_header(include: str) -> bool:
    """Whether a kept ``#include <...>`` line is the toolkit's or the C++ library's (no kernels)."""
    name = _header_name(include)
    return "/" not in name or name.startswith(("cuda/", "cub/", "thrust/", "cooperative_groups/", "crt/", "nv/"))


OverloadChoice = Callable[[Sequence[Function]], Function]
"""Of kernel templates that share a name and all accept the given template arguments, the
one the instance is (or an ``HFuseError`` saying why it cannot tell)."""


def _unknown_macro_before(function: Function) -> str | None:
    """The macro-like word between ``__global__`` and ``function``'s name in its file
    (``__global__ void C10_LAUNCH_BOUNDS_1(256) k(...)``), which hfuse read as the
    declarator because nothing defined it; None if there is none."""
    try:
        lines = Path(function.file).read_text(errors="replace").splitlines()
    except OSError:
        return None
    head = "\n".join(lines[max(0, function.line - 4):function.line])
    head = head[:head.rfind(function.name)] if function.name in head else head
    found = re.search(r"\b__global__\b[\s\w:<>*&]*?\b([A-Z_][A-Z0-9_]{2,})\s*\([^()]*\)\s*$", head)
    return found.group(1) if found else None


def _accepts(kernel: Function, count: int) -> bool:
    """Whether ``count`` template arguments fit ``kernel``'s parameters: as many, fewer where
    the rest have defaults, or more where the last is a pack."""
    params = len(kernel.template_params)
    if kernel.template_pack is not None and count >= params - 1:
        return True
    return count <= params and all(d is not None for d in kernel.template_defaults[count:])


_DEVICE_STORAGE = re.compile(r"(?<!\w)(__constant__|__device__|__managed__)(?!\w)")


def _variable_head(item: TopLevelItem) -> str | None:
    """The text before a file-scope variable's initializer, without ``__align__`` (None: no variable)."""
    head = re.sub(r"__align__\s*\([^()]*\)", "", item.text.split("=")[0])
    if item.kind != "declaration" or item.function is not None or "(" in head:
        return None
    return None if re.search(r"(?<!\w)extern(?!\w)", head) else head


def is_extern_shared(item: TopLevelItem) -> bool:
    """A file-scope ``extern __shared__ T name[];`` (the block's dynamic shared memory)."""
    return item.kind == "declaration" and _EXTERN_SHARED.match(item.text) is not None


def is_device_variable(item: TopLevelItem) -> bool:
    """A ``__constant__``/``__device__``/``__managed__`` variable definition (not ``extern``)."""
    head = _variable_head(item)
    return head is not None and bool(_DEVICE_STORAGE.search(head))


def is_shared_variable(item: TopLevelItem) -> bool:
    """A file-scope ``__shared__`` variable (not ``extern``): one per block, so parts that
    ran in blocks of their own must each get one in a block they share."""
    head = _variable_head(item)
    return head is not None and re.search(r"(?<!\w)__shared__(?!\w)", head) is not None


def _renamable(item: TopLevelItem) -> bool:
    """A type, typedef, alias or constant that a part can have its own renamed copy of: a
    class with member functions too, where each is written in it (a copy of the text is a
    copy of the class; a member defined outside would need its own)."""
    head = _ATTRIBUTE.sub("", item.text.split("{")[0].split("=")[0])  # (alignas(16) is no parameter list)
    if item.kind != "declaration" or item.function is not None or "(" in head:
        return False
    return not item.members or bool(_DEFINES_CLASS.match(item.text)) and not any(m.defined_outside
                                                                                for m in item.members)


def _class_family(name: str, files: Sequence[SourceFile], definitions: Mapping[Path, Mapping[str, TopLevelItem]],
                  ) -> dict[Path, list[TopLevelItem]] | None:
    """Each source's family of the class template ``name`` (forward declarations, the
    primary, its specialisations, in the source's order), when every definition of it is a
    class whose members are written in it; None otherwise."""
    every = [item for texts in definitions.values() for item in texts.values()]
    if not all(_renamable(i) and _DEFINES_CLASS.match(i.text) for i in every):
        return None
    family: dict[Path, list[TopLevelItem]] = {}
    for source in files:
        if source.path in definitions:
            family[source.path] = [i for i in source.items if name in i.keys and i.kind == "declaration"
                                   and (_FORWARD.match(i.text) or _DEFINES_CLASS.match(i.text))]
    return family


_FORWARD = re.compile(r"^\s*(template\s*<[^{;]*>\s*)?(struct|class|union|enum(\s+(class|struct))?)\s+[\w:]+\s*(:[^{;]*)?;?\s*$")


def _disagreements(definitions: Mapping[str, Mapping[Path, Mapping[str, TopLevelItem]]],
                   ) -> dict[str, list[tuple[TopLevelItem, Path]]]:
    """Of each name that some input defines several times, each input that defines the name
    and lacks one of those definitions, with one it lacks (one defining it once, differently,
    is a clash: one per part)."""
    found: dict[str, list[tuple[TopLevelItem, Path]]] = {}
    for name, by_file in definitions.items():
        if len(by_file) < 2 or all(len(texts) < 2 for texts in by_file.values()):
            continue
        every = {text: item for texts in by_file.values() for text, item in texts.items()}
        for path, texts in by_file.items():
            missing = next((item for text, item in every.items() if text not in texts), None)
            if missing is not None:  # (each input that lacks one: its kernels may be the ones that use the name)
                found.setdefault(name, []).append((missing, path))
    return found


def is_prototype(item: TopLevelItem) -> bool:
    """A declaration without a body: a function prototype, or a forward declaration of a
    type (``struct Params;``), which one header may make and another define."""
    if item.kind != "declaration" or item.function is not None or "{" in item.text:
        return False
    # (a variable's initialiser may call: ``template <class T> constexpr T k = T(2);`` defines)
    return "(" in _without_template_header(item.text).split("=")[0] or _FORWARD.match(item.text) is not None


def _without_template_header(text: str) -> str:
    """The declaration after its ``template <...>`` headers (their defaults hold ``=``)."""
    rest = text.lstrip()
    while (header := re.match(r"template\s*<", rest)) is not None:
        depth, at = 1, header.end()
        while at < len(rest) and depth:
            depth += {"<": 1, ">": -1}.get(rest[at], 0)
            at += 1
        rest = rest[at:].lstrip()
    return rest
