"""Which definition an instance of a kernel template runs: the primary, or an explicit
specialisation (``template <> __global__ void k<float>(float* x) {...}``).

C++ runs the specialisation for ``k<float>``; a fused part built from the primary's body
would compute something else, compile, and be wrong. The specialisation is returned as a
template of the primary's parameters (renamed, so none can hide a name of the file) whose
body is the specialisation's: instantiated with the same arguments, that is the code C++
runs, and everything downstream (parts, instantiation, launch) stays as for any template.
A specialisation whose arguments are deduced from its parameters
(``template <> __global__ void k(float* x)``) is refused: telling which instance it is takes
C++'s template argument deduction; so is an instance hfuse cannot tell apart from a
specialisation's arguments (``k<MyFloat>`` beside ``k<float>``: a type spelled two ways).
"""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Callable, Sequence

from ..errors import HFuseError, Location
from .constant import evaluate
from .extract import model_source
from .model import Function, TopLevelItem
from .parse import compact, split_template_args

ArgumentsAlike = Callable[[Function, Sequence[tuple[str, str, bool]]], Sequence["bool | None"]]
"""A C++ compiler's answer to whether pairs of template arguments of a kernel (``(a, b, a
type?)``, read in its namespace) are the same: each True, False or None (cannot tell)."""

_HIDDEN_PREFIX = "hf_spec_"
"""The specialisation's template parameters are named so that its body cannot mention them."""


def specialised(primary: Function, functions: Sequence[Function], template_args: Sequence[str],
                alike: ArgumentsAlike | None = None) -> Function:
    """The definition ``primary<template_args>`` runs (``primary`` when no explicit
    specialisation of the kernel is for these arguments). Arguments spelled apart that hfuse
    cannot compare (``float`` and PyTorch's ``at::Half``) are asked of ``alike``."""
    if not primary.is_template:
        return primary
    wanted = _normalised(primary, template_args)
    undecided = None
    for candidate in functions:
        if (candidate.kind != "global" or not candidate.is_explicit_specialisation
                or candidate.scope != primary.scope or candidate.owner != primary.owner
                or candidate.name.split("<", 1)[0].strip() != primary.name):
            continue
        deduced = _deduced(primary, candidate) if "<" not in candidate.name else None
        if "<" not in candidate.name and deduced is None:
            raise HFuseError(
                f"kernel '{primary.name}' has an explicit specialisation whose template arguments are deduced from "
                "its parameters; hfuse cannot tell whether it is the instance asked for",
                Location(candidate.file, candidate.line, primary.name),
                hint=f"write its arguments after the name (template <> __global__ void {primary.name}<...>(...)), "
                     "or keep this kernel unfused",
            )
        inside = deduced if deduced is not None else \
            split_template_args(candidate.name[candidate.name.index("<") + 1 : candidate.name.rindex(">")])
        given = _normalised(primary, inside)
        same = _same_arguments(given, wanted)
        if same is None and alike is not None:
            same = _asked(primary, given, wanted, alike)
        if same is True:
            return _as_template_of(candidate, primary)
        if same is None and undecided is None:
            undecided = candidate
    if undecided is not None:
        raise HFuseError(
            f"hfuse cannot tell whether {primary.name}<{', '.join(template_args)}> is the instance the explicit "
            f"specialisation {undecided.name} is for (a type spelled two ways, an expression)",
            Location(undecided.file, undecided.line, primary.name),
            hint="write the template arguments as the specialisation does, or keep this kernel unfused",
        )
    return primary


_ALIASES = {"half": "__half", "half2": "__half2", "nv_bfloat16": "__nv_bfloat16", "nv_bfloat162": "__nv_bfloat162",
            "signed": "int", "signedint": "int", "unsigned": "unsignedint", "longint": "long",
            "longlongint": "longlong", "unsignedlongint": "unsignedlong", "unsignedlonglongint": "unsignedlonglong"}
"""Spellings of one type (compacted): CUDA's typedefs of its half types, C++'s integer words."""
_DISTINCT = frozenset({
    "bool", "char", "signedchar", "unsignedchar", "short", "unsignedshort", "int", "unsignedint", "long",
    "unsignedlong", "longlong", "unsignedlonglong", "float", "double", "longdouble", "__half", "__half2",
    "__nv_bfloat16", "__nv_bfloat162", "__nv_fp8_e4m3", "__nv_fp8_e5m2",
    *(f"{base}{n}" for base in ("char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "longlong",
                                 "ulonglong", "float", "double") for n in (1, 2, 3, 4)),
})
"""Types known to be different from one another (compacted spellings, aliases resolved)."""


def _same_arguments(given: Sequence[str], wanted: Sequence[str]) -> bool | None:
    """Whether two argument lists name one instance: True, False, or None (cannot tell)."""
    if len(given) != len(wanted):
        return None
    verdict: bool | None = True
    for a, b in zip(given, wanted):
        a, b = _ALIASES.get(a, a), _ALIASES.get(b, b)
        if a == b:
            continue
        x, y = evaluate(a), evaluate(b)
        if x is not None and y is not None:
            if x != y:
                return False
            continue
        if a in _DISTINCT and b in _DISTINCT:
            return False
        verdict = None
    return verdict


_TOKEN = re.compile(r"\w+|::|\S")


def _deduced(primary: Function, candidate: Function) -> tuple[str, ...] | None:
    """The template arguments of a specialisation written without them, read off its parameters
    as C++ deduces them where each is spelled as the primary's with one name for each of its
    parameters (mmcv's ``template <> __global__ void k(const phalf* input, ...)`` of ``k(const
    T* input, ...)``: ``T = phalf``); None where they are not so read (every parameter bound once,
    consistently)."""
    if len(primary.params) != len(candidate.params) or not primary.template_params:
        return None
    bound: dict[str, str] = {}
    for mine, theirs in zip(primary.params, candidate.params):
        a, b = (_TOKEN.findall(_without_name(p)) for p in (mine, theirs))
        if len(a) != len(b):
            return None
        for x, y in zip(a, b):
            if x in primary.template_params:
                if bound.setdefault(x, y) != y or not re.fullmatch(r"\w+", y):
                    return None
            elif x != y:
                return None
    return tuple(bound[p] for p in primary.template_params) if all(p in bound for p in primary.template_params) \
        else None


def _without_name(param) -> str:
    text = param.declaration
    if param.name and param.name_start >= 0:
        text = text[:param.name_start] + text[param.name_start + len(param.name):]
    return text


def _asked(primary: Function, given: Sequence[str], wanted: Sequence[str], alike: ArgumentsAlike) -> bool | None:
    """``_same_arguments`` of the pairs it cannot tell, asked of a C++ compiler."""
    header = primary.template_header
    declared = split_template_args(header[header.index("<") + 1:header.rindex(">")]) if "<" in header else []
    kinds = [re.match(r"(?:typename|class)\b", d.strip()) is not None for d in declared]
    pairs = [(a, b, i < len(kinds) and kinds[i]) for i, (a, b) in enumerate(zip(given, wanted))
             if _same_arguments([a], [b]) is None]
    answers = list(alike(primary, pairs))
    return False if False in answers else True if answers and all(answers) else None


def _normalised(primary: Function, args: Sequence[str]) -> tuple[str, ...]:
    return tuple(compact(a) for a in primary.complete_template_args(tuple(args)))


def declared_primary(item: TopLevelItem) -> Function | None:
    """The kernel template a prototype declares (``template <typename T> __global__ void
    k(T* p);``) whose instances are all explicit specialisations, as DeepSpeed writes its
    transforms: a Function with an empty body, only ever the template an instance's
    specialisation is taken as (``Program.kernel`` refuses an instance none is for)."""
    text = item.text.strip()
    if item.kind != "declaration" or item.function is not None or "{" in text or not text.endswith(");") \
            or not re.match(r"template\s*<\s*[^>\s]", text) or not re.search(r"\b__global__\b", text):
        return None
    functions = model_source(item.file, text[:-1] + " {}").functions
    if len(functions) != 1 or functions[0].kind != "global":
        return None
    return replace(functions[0], scope=item.scope, line=item.line)


def _as_template_of(specialisation: Function, primary: Function) -> Function:
    """``specialisation`` written as a template of ``primary``'s parameters, renamed."""
    renamed = {p: f"{_HIDDEN_PREFIX}{p}" for p in primary.template_params if p}

    def rename(text: str) -> str:
        return re.sub(r"\b[A-Za-z_]\w*\b", lambda m: renamed.get(m.group(), m.group()), text)

    header = rename(primary.template_header)
    if "//" not in header:  # on one line, so the lines of the body keep their numbers
        header = " ".join(header.split())
    text = specialisation.text
    head = re.match(r"\s*template\s*<\s*>", text)
    assert head is not None, specialisation.text[:80]
    text = header + text[head.end():]
    # the declarator's name loses its argument list: ``k<float>(`` -> ``k(`` (a deduced one has none)
    name_at = re.search(rf"\b{re.escape(primary.name)}\s*<", text[len(header):]) if "<" in specialisation.name \
        else None
    assert name_at is not None or "<" not in specialisation.name, specialisation.text[:80]
    if name_at is not None:
        start = len(header) + name_at.end() - 1
        end = _closing_angle(text, start)
        text = text[:start] + text[end + 1 :]
    return replace(
        specialisation,
        name=primary.name,
        text=text,
        template_header=header,
        template_params=tuple(renamed.get(p, p) for p in primary.template_params),
        template_defaults=tuple(rename(d) if d is not None else None for d in primary.template_defaults),
        template_pack=renamed.get(primary.template_pack, primary.template_pack) if primary.template_pack else None,
    )


def _closing_angle(text: str, start: int) -> int:
    """The offset of the ``>`` that closes the ``<`` at ``start``."""
    depth = 0
    for i in range(start, len(text)):
        if text[i] in "<([":
            depth += 1
        elif text[i] in ">)]":
            depth -= 1
            if depth == 0:
                return i
    raise AssertionError(text[start:start + 80])
