"""Clang's answers joined to hfuse's facts: user functions that reach kept-header code
which reads the block.

hfuse's own analysis (``analysis.py``, ``opaque.py``) reads the user's text: it rewrites
what the user writes and recognises CUB's and cooperative groups' names however they are
spelt. Code of the headers it keeps (``#include <...>``) it cannot see. Clang can
(``frontend/clang.py``): for every reference a user's function makes to a kept header,
what that code reads. What it finds is added to the function's facts, so the kernels that
reach it are placed exactly as if hfuse had seen it itself:

- reading ``threadIdx`` or synchronising the block: correct only where a fused block runs
  one whole block of the kernel on its first threads (``FunctionFacts.whole_block``);
- reading ``blockDim``, ``blockIdx`` or ``gridDim`` (or their PTX registers): no layout
  keeps them as the kernel saw them, so it is refused (``FunctionFacts.opaque``);
- code Clang could not follow to its end: refused too (unknown is never safe).

Cooperative groups are left to hfuse's own rewrite, which converts them where they are
written (``cooperative_groups.py``) and refuses the spellings it cannot convert.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Mapping

from ..frontend.clang import FunctionMeaning, HeaderUse, Meaning
from ..frontend.clang_names import KNOWN_NAMESPACES, HeaderNames, UnreadFile
from ..frontend.model import (OWN_BLOCK_READS, THREAD_INDEX_READS, WARPGROUP_RUN, WHOLE_BLOCK_READS, Function,
                              scope_names)
from ..frontend.parse import declarator_name, line_of, parse, walk
from ..frontend.resolve import LocalNames, Resolver
from ..toolkit import PYTORCH_EXTENSION_DEFINES
from .analysis import MACRO_SUSPICION, FunctionFacts, ProgramFacts
from .opaque import REFUSAL_HINT, Unseen, classify_cub, cub_entity, plain_name

COOPERATIVE_GROUPS = "cooperative_groups::"
_WHOLE_BLOCK_READS = WHOLE_BLOCK_READS | {WARPGROUP_RUN}
"""What a kept header may do where its kernel runs whole: PTX's reads, and warpgroup code."""


def classify(use: HeaderUse) -> Unseen | None:
    """What a reference to kept-header code means for fusion (None: nothing it reads matters)."""
    if use.through:
        return Unseen(f"a call through template parameter '{use.through}' (its object's or its own "
                      "function): what runs is the code of the type an instance gives it, which hfuse reads "
                      "only in an instance Clang instantiates (the template arguments given)", whole_block=False,
                      hint="give the kernel's template arguments (-k 'name<...>:256'); where they are given, the "
                      "notes say why the instance could not be read")
    if use.qualified.startswith(COOPERATIVE_GROUPS):
        return None
    where = f"'{use.qualified}' of a header hfuse keeps as an #include"
    entity = cub_entity(use.qualified)
    if use.unknown and entity is not None:
        known = classify_cub(entity)
        if known is None or known.whole_block:
            return known  # CUB's names, known by what CUB documents them to do, however far Clang's walk went
    if use.unknown:
        return Unseen(f"{where}, whose code Clang's walk could not follow to its end (in a template, a call "
                      "through a template parameter, B::f(), or a member call or an operator on an object of the "
                      "header's, names no code until the template is instantiated; calls nested deeper than "
                      "hfuse follows; or code Clang reports an error in, which nvcc lets pass, such as a dependent "
                      "member template called without 'template'): hfuse does not know what it reads", whole_block=False,
                      hint="give a kernel template its template arguments (-k 'name<...>:256'), so that hfuse reads "
                      "the instance; or keep this kernel unfused")
    if not use.reads:
        return None
    what = ", ".join(use.reads)
    if set(use.reads) <= _WHOLE_BLOCK_READS:
        return Unseen(f"{where}, which {what} (found by Clang; hfuse does not rewrite kept headers)",
                      whole_block=True)
    if set(use.reads) <= _WHOLE_BLOCK_READS | OWN_BLOCK_READS:
        return Unseen(f"{where}, which {what} (found by Clang; hfuse does not rewrite kept headers)",
                      whole_block=True, own_block=True)
    return Unseen(f"{where}, which {what} (found by Clang): no fused layout keeps that as the kernel saw it",
                  whole_block=False)


def add_header_reads(program: ProgramFacts, meaning: Meaning) -> int:
    """Add what Clang found to the facts of the functions it found it in; the number of
    findings added. A line keeps one finding, the stronger (refused over whole block); one
    hfuse's own analysis already made there keeps its message."""
    added = 0
    for facts in program.facts.values():
        for f in facts:
            found = meaning.function(f.function.file, f.function.name, f.function.line)
            if found is None:
                continue
            _drop_declared_macro_suspicions(f, found)
            refused = {line for _, line, _ in f.opaque}
            whole = {line for _, line in f.whole_block}
            own_whole = set(whole)
            findings = [(use, unseen) for use in found.uses if (unseen := classify(use)) is not None]
            for use, unseen in sorted(findings, key=lambda found: found[1].whole_block):
                if use.line in refused or use.line in whole and (unseen.whole_block or use.line in own_whole):
                    continue  # (CUB's collectives, which hfuse knows by name, are whole-block whatever Clang follows)
                added += 1
                if unseen.whole_block:
                    f.whole_block.append((unseen.why, use.line))
                    whole.add(use.line)
                    if unseen.own_block:
                        f.own_block.append((unseen.why, use.line))
                    if set(use.reads) & THREAD_INDEX_READS and cub_entity(use.qualified) is None:
                        f.raw_thread_index.append((unseen.why, use.line))  # (CUB counts the linear index)
                else:
                    f.opaque.append((unseen.why, use.line, unseen.hint or REFUSAL_HINT))
                    refused.add(use.line)
    return added


def _drop_declared_macro_suspicions(facts: FunctionFacts, found: FunctionMeaning) -> None:
    """An all-capitals call hfuse took for a macro nobody defined (``facts.macro_like``) that
    Clang found declared by a kept header at that line is no macro: its refusal goes, and
    Clang's finding for it (what it reads, if anything) stands instead."""
    declared = {(use.qualified.rsplit("::", 1)[-1], use.line) for use in found.uses if not use.through}
    cleared = {(name, line) for name, line in facts.macro_like
               if (name.rsplit("::", 1)[-1].split("<")[0].strip(), line) in declared}
    if not cleared:
        return
    refusals = {(MACRO_SUSPICION.format(name), line) for name, line in cleared}
    facts.macro_like[:] = [entry for entry in facts.macro_like if entry not in cleared]
    facts.opaque[:] = [entry for entry in facts.opaque if (entry[0], entry[1]) not in refusals]


_KNOWN = tuple(f"{namespace}::" for namespace in KNOWN_NAMESPACES)
_UNREAD_HINT = "make the file readable for Clang (the include folders and -std of your build), or keep this kernel unfused"


def _unread_hint(why: str) -> str:
    """The hint for a file Clang could not read because of ``why``: where it is an operator on
    PyTorch's half types, the flags PyTorch's extension builder adds (without them, c10::Half's
    conversions and CUDA's half operators make ``a > b`` ambiguous: torchsort's kernels)."""
    if re.search(r"\bc10::(?:Half|BFloat16)\b", why) and "ambiguous" in why:
        flags = " ".join(f"-D{name}" for name in PYTORCH_EXTENSION_DEFINES)
        return (f"give the flags of your build: PyTorch's extension builder adds {flags} "
                "(torch.utils.cpp_extension), without which operators on c10::Half are ambiguous; or keep this "
                "kernel unfused")
    return _UNREAD_HINT


def add_unchecked_calls(program: ProgramFacts, unread: Mapping[Path, UnreadFile], resolver: Resolver) -> int:
    """Where Clang could not read a file that keeps headers nobody checked (``unread``: the
    file and the user's headers it reads, each with why and what those headers declare), a
    function that may reach their code is refused: what it reads of the block is unknown.
    Once, a kernel template's ``lib::block_sum<T>(v, sh)``, synchronising the whole block, was
    fused that way, and ``lib::Reducer r(s); r.sum(v)`` or ``Reducer(s).sum(v)`` inside ``namespace
    lib`` were, by the names alone. A qualified call of a function no input defines, and any
    name the headers declare that the function names (``HeaderNames``), are refused; where what
    they declare is unknown too (libclang unusable, headers Clang cannot compile), every
    function of the file. The number of refusals added."""
    of = {os.path.realpath(path): found for path, found in unread.items()}
    added = 0
    for facts in program.facts.values():
        for f in facts:
            found = of.get(os.path.realpath(f.function.file))
            if found is None:
                continue
            for name, line in f.outside_calls:
                bare = name.lstrip(":")
                if "::" not in bare or bare.startswith(_KNOWN):
                    continue
                f.opaque.append((f"'{name}' is defined by no input, and what it reads of the block is unchecked: "
                                 f"{found.why}", line, _unread_hint(found.why)))
                added += 1
            if isinstance(found.names, str):
                also = f" ({found.names})" if found.names != found.why else ""
                f.opaque.append((f"what '{f.function.name}' reaches in the headers its file keeps is unchecked: "
                                 f"{found.why}{also}", f.function.line, _unread_hint(found.why)))
                added += 1
                continue
            for name, line, declared in _header_names_named(f.function, resolver, found.names):
                what = f"'{name}'" if name == declared else f"'{name}' may be '{declared}', which"
                f.opaque.append((f"{what} is declared by a header nobody checked, and what it reads of the block is "
                                 f"unchecked: {found.why}", line, _unread_hint(found.why)))
                added += 1
    return added


_DECLARING = frozenset({"declaration", "parameter_declaration", "optional_parameter_declaration", "type_definition",
                        "alias_declaration", "for_range_loop", "field_declaration"})


def _header_names_named(function: Function, resolver: Resolver, names: HeaderNames) -> list[tuple[str, int, str]]:
    """(the name as written, line, the headers' declaration) of each name ``function`` writes
    that no input defines and the headers declare, as ordinary lookup would find it from there."""
    root = parse(function.text.encode()).root_node
    local = LocalNames.of(root)
    own = {p.name for p in function.params if p.name} | set(function.template_params)
    for node in walk(root):  # (its locals, a lambda's parameters, its typedefs: a header's name they shadow)
        if node.type in _DECLARING:
            own.update(d.text.decode() for field in ("declarator", "name")
                       for child in node.children_by_field_name(field) if (d := declarator_name(child)) is not None)
    scopes = scope_names(function.scope)
    usings = [w for depth in range(len(scopes), -1, -1) for w in resolver.usings.get("::".join(scopes[:depth]), [])]
    usings = [resolver.namespace(function.scope, w, local) for w in [*usings, *local.usings]]
    found, base = [], function.line - 1
    for node in walk(root):
        if node.type == "qualified_identifier" and node.parent.type != "qualified_identifier":
            written = plain_name(node.text.decode())
            if written.lstrip(":").split("::")[0] in own or resolver.resolve(function.scope, written, local):
                continue
            declared = names.qualified(resolver.namespace(function.scope, written, local))
        elif node.type in ("identifier", "type_identifier") and node.parent.type != "qualified_identifier":
            written = node.text.decode()
            if written in own or resolver.resolve(function.scope, written, local):
                continue
            declared = names.found(written, scopes, usings)
        else:
            continue
        if declared is not None:
            found.append((written, base + line_of(node), declared))
    return found
