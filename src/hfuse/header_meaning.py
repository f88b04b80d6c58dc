"""Clang's reading of a request's files (``frontend/clang.py``): one parse per file, with that
file's options and its kernel template instances named for Clang to instantiate
(``frontend/instances.py``), and what the request must say of it: a header asking for
a later C++ standard is an error; a file Clang could not read is a note, and the files
whose kept headers nobody checked then (``transform/header_reads.add_unchecked_calls``)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Mapping, Sequence

from .errors import HFuseError, Location
from .files import default_cache_dir
from .frontend.clang import Meaning, instantiated_lines, read_meaning, unchecked_headers
from .frontend.clang_constants import ConstantQuestion, ask_clang
from .frontend.clang_names import UnreadFile, header_names
from .frontend.instances import instance_reference
from .frontend.model import Function, SourceFile
from .frontend.program import OverloadChoice
from .frontend.specialisation import ArgumentsAlike
from .frontend.options import CompileOptions
from .spec import KernelSpec
from .transform.analysis import ProgramFacts


def header_meaning(specs: Sequence[KernelSpec], kernels: Sequence[Function], files: Sequence[SourceFile],
                    sources: Mapping[str | Path, str] | None,
                    options: CompileOptions, only: frozenset[tuple[str, int]] | None = None,
                    ) -> tuple[Meaning, tuple[str, ...], dict[Path, UnreadFile]]:
    """Clang's reading of what each file's functions reach in the headers hfuse keeps (one
    parse per file, with that file's options), a note for each file it could not read, and
    those files (with the user's headers they read) that keep headers nobody checked, with why
    and what those headers declare (``clang_names.UnreadFile``).
    ``only``: the functions worth reading (``read_meaning``), None for all."""
    given = {str(k): v for k, v in (sources or {}).items()}
    found, notes, unread = [], [], {}
    for source in files:
        spec = next(s for s in specs if s.file == source.path)
        references = [instance_reference(k, s.template_args, i) for i, (s, k) in enumerate(zip(specs, kernels))
                      if s.file == source.path]
        meaning = read_meaning([source.path], spec.options or options, user_files=source.headers,
                               kept_preamble=source.kept_preamble, sources=given, instances=[r for r in references if r],
                               only=only)
        if meaning.dialect is not None:
            used = (spec.options or options).std
            raise HFuseError(
                f"a header this file keeps requires {meaning.dialect.replace('c', 'C', 1)} ({meaning.dialect_where}); "
                f"hfuse reads the file as -std={used}, as nvcc would", Location(source.path),
                hint=f"pass -std {meaning.dialect} (or std: {meaning.dialect} under compile: in a config), as your "
                "build does: nvcc stops at the same #error without it (PyTorch's extension build passes -std=c++20)")
        if meaning.instances_unread is not None:
            notes.append(f"note: Clang could not instantiate the kernel templates of {source.path.name} as asked "
                         f"({meaning.instances_unread}); it read them as templates, where a call "
                         "through a type that depends on a template parameter names no code")
        if meaning.unavailable is not None:
            notes.append(f"note: {meaning.unavailable}; hfuse refuses what its functions may reach in the headers "
                         "it keeps, by the names those headers declare")
            if unchecked_headers(source.kept_preamble):
                names = header_names(spec.options or options, tuple(source.kept_preamble), str(default_cache_dir()))
                unread.update({path: UnreadFile(meaning.unavailable, names) for path in (source.path, *source.headers)})
        found.extend(meaning.functions)
    return Meaning(tuple(found)), tuple(notes), unread


def overload_choice(spec: KernelSpec, source: SourceFile, sources: Mapping[str | Path, str] | None,
                    options: CompileOptions) -> OverloadChoice:
    """Of kernel templates that share ``spec``'s name and accept its template arguments, the
    one Clang's overload resolution instantiates for them (SFINAE'd overloads: vLLM's
    ``fused_add_rms_norm_kernel<half, 8>`` and ``<float, 0>``); asked only where the
    arguments' number leaves several. Where Clang cannot say, an error says why."""
    def choose(candidates: Sequence[Function]) -> Function:
        reference = instance_reference(candidates[0], spec.template_args, 0)
        given = tuple((str(k), v) for k, v in (sources or {}).items() if str(k) == str(source.path))
        lines = instantiated_lines(source.path, spec.options or options, reference or "",
                                   kept_preamble=tuple(source.kept_preamble), sources=given)
        hit = [] if isinstance(lines, str) else [
            f for f in candidates if f.line <= lines[1] and lines[0] <= f.line + f.text.count("\n")]
        if len(hit) == 1:
            return hit[0]
        name = f"{spec.name}<{', '.join(spec.template_args)}>"
        if isinstance(lines, str) and "overloaded function type" in lines:
            raise HFuseError(
                f"'{spec.name}' names {len(candidates)} kernel templates (lines "
                f"{', '.join(str(f.line) for f in candidates)}) that all take '{name}': they differ in their "
                "parameters, which a kernel's name and template arguments do not say",
                Location(source.path, candidates[0].line, spec.name),
                hint=f"say which by the line its definition starts on: -k '{name}@{candidates[0].line}:BLOCK'")
        raise HFuseError(
            f"'{spec.name}' names {len(candidates)} kernel templates that take {len(spec.template_args)} template "
            f"argument(s) (lines {', '.join(str(f.line) for f in candidates)}), and hfuse cannot tell which one "
            f"'{name}' is: {lines if isinstance(lines, str) else 'Clang named another'}",
            Location(source.path, candidates[0].line, spec.name),
            hint="check that nvcc compiles this instance with the same flags; or rename one kernel")
    return choose


def worth_reading(everything: ProgramFacts, kernels: Sequence[Function]) -> frozenset[tuple[str, int]]:
    """The functions whose kept-header reads can matter (file, line): what the kernels call,
    and every member function, which a header's template may call (a functor's ``operator()``)."""
    reached = {key for k in kernels for key in everything.reachable(k.key)}
    return frozenset((os.path.realpath(fn.function.file), fn.function.line)
                     for key, facts in everything.facts.items() for fn in facts
                     if key in reached or fn.function.owner is not None or fn.function.hidden_friend)


def arguments_alike(spec: KernelSpec, source: SourceFile, sources: Mapping[str | Path, str] | None,
                    options: CompileOptions) -> ArgumentsAlike:
    """Clang's answer to whether template arguments spelled apart are the same (``float`` and
    ``at::Half`` beside mmcv's ``template <> __global__ void k<at::Half>``): each pair read
    after the file, in the kernel's namespace (``__is_same`` of types, ``==`` of values)."""
    given = {str(k): v for k, v in (sources or {}).items()}

    def alike(kernel: Function, pairs: Sequence[tuple[str, str, bool]]) -> tuple[bool | None, ...]:
        questions = [ConstantQuestion(source.path, kernel.scope, f"__is_same({a}, {b})" if is_type else f"({a}) == ({b})")
                     for a, b, is_type in pairs]
        answers = ask_clang(questions, spec.options or options, tuple(source.kept_preamble), given)
        return tuple(None if answer is None else bool(answer) for answer in answers)
    return alike
