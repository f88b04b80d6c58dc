"""The user's macros kept as written in the fused file: ``TILE``, ``SQR(a[i])`` and
``CUDA_KERNEL_LOOP(i, n)`` stay where hfuse left what they expand to untouched.

hfuse reads, analyses and rewrites the expanded text, which is what the compiler sees.
When it writes a definition out, each use of one of the user's macros whose whole
expansion it left as it was gets the user's spelling back, and the fused file defines
those macros around the definitions that use them (and ``#undef``s them after, so that
nothing else in the file sees them). This is proved, not assumed, for each section: every
use written back expands (with pcpp, the preprocessor hfuse read the file with) to exactly
the tokens it stands for and leaves no macro name behind; no other token of the section
names a macro defined there; and each name has one definition in the section. Then the
section preprocesses to the text hfuse analysed and rewrote. A definition for which this
fails is written expanded, as it always was.

What is never kept: a use inside a ``#pragma`` or other directive, a macro with ``#``, ``##``
or variadic parameters, and any use whose expansion a rewrite touched (``#define TID
threadIdx.x`` becomes the part's ``hf_ctx.threadIdx.x``, expanded).
"""
from __future__ import annotations

import difflib
import re
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, Mapping, Sequence

import pcpp

from ..errors import HFuseError
from ..frontend.parse import read_source_file
from ..frontend.model import SourceFile, UserMacro

_TRIVIA = ("CPP_WS", "CPP_LINECONT", "CPP_COMMENT1", "CPP_COMMENT2")
"""What pcpp lexes that is no token."""
_IDENTIFIER = re.compile(r"[A-Za-z_]\w*")
_DIRECTIVE_LINE = re.compile(r"^[ \t]*#(?:[^\n\\]|\\\n|\\)*", re.M)


@dataclass(frozen=True)
class _Token:
    value: str
    start: int
    end: int


@dataclass(frozen=True)
class _Use:
    """A macro use in the original text: its name, its characters, its first and past-last token."""

    name: str
    start: int
    end: int
    first: int
    last: int


def _keepable(macros: Mapping[str, UserMacro]) -> dict[str, UserMacro]:
    """The macros that may be written into the fused file: no ``#``/``##``, no variadic
    parameters, and nothing in their value that names a macro which may not."""
    simple = {name: m for name, m in macros.items()
              if "#" not in m.value and not any(p.endswith("...") for p in (m.params or ()))}
    changed = True
    while changed:
        changed = False
        for name, m in list(simple.items()):
            if any(n in macros and n not in simple for n in _IDENTIFIER.findall(m.value)):
                del simple[name]
                changed = True
    return simple


_LEXEME = re.compile(
    r"""(?P<skip>\s+|//[^\n]*|/\*.*?\*/|\\\n)"""
    r"""|(?P<literal>(?:u8|[uUL])?(?:"(?:[^"\\\n]|\\.)*"|'(?:[^'\\\n]|\\.)*'))"""
    r"""|(?P<word>[A-Za-z_]\w*)"""
    r"""|(?P<number>\.?\d(?:[eEpP][+-]|[\w.])*)"""
    r"""|(?P<mark>.)""", re.S)


def tokens(text: str) -> list[_Token]:
    """The tokens of ``text`` without spaces and comments; an operator is one character per
    token (``>>=`` is ``>``, ``>``, ``=``), so that a text and the same text lexed by another
    preprocessor and joined again compare equal."""
    return [_Token(m.group(), m.start(), m.end()) for m in _LEXEME.finditer(text) if m.lastgroup != "skip"]


class _Expander:
    """pcpp with exactly the given macros defined: expansion as the fused file's ``#define``
    lines would expand."""

    def __init__(self, macros: Iterable[UserMacro]):
        self.pp = pcpp.Preprocessor()
        self.pp.line_directive = None
        for name in list(self.pp.macros):
            self.pp.undef(name)
        for m in macros:
            self.pp.define(m.definition.removeprefix("#define "))

    def expand(self, text: str) -> list[str]:
        """``text`` preprocessed with these macros, as ``tokens`` splits text."""
        values = [t.value for t in self.pp.expand_macros(self.pp.tokenize(text)) if t.type not in _TRIVIA]
        return [t.value for t in tokens(" ".join(values))]


def _uses(lexed: list[_Token], macros: Mapping[str, UserMacro]) -> list[_Use]:
    """The top-level uses of ``macros`` among a text's tokens (a function-like one only with its arguments)."""
    uses, i = [], 0
    while i < len(lexed):
        macro = macros.get(lexed[i].value)
        if macro is None:
            i += 1
            continue
        if macro.params is None:
            uses.append(_Use(macro.name, lexed[i].start, lexed[i].end, i, i + 1))
            i += 1
            continue
        if i + 1 >= len(lexed) or lexed[i + 1].value != "(":
            i += 1
            continue
        depth, j = 0, i + 1
        while j < len(lexed):
            depth += lexed[j].value == "("
            depth -= lexed[j].value == ")"
            if depth == 0:
                break
            j += 1
        if j >= len(lexed):
            break
        uses.append(_Use(macro.name, lexed[i].start, lexed[j].end, i, j + 1))
        i = j + 1
    return uses


def _code(text: str) -> str:
    """``text``'s names, numbers and operators, without comments and literals (where a
    macro's name is no use of it)."""
    return " ".join(m.group() for m in _LEXEME.finditer(text) if m.lastgroup not in ("skip", "literal"))


def _names_any(text: str, names: Iterable[str]) -> bool:
    """Whether ``text`` holds one of ``names`` as an identifier (a cheap look before lexing)."""
    return not set(names).isdisjoint(_IDENTIFIER.findall(text))


def _without_directives(text: str) -> str:
    """``text`` with its directive lines blanked (same length): a use there is never kept."""
    return _DIRECTIVE_LINE.sub(lambda m: re.sub(r"[^\n]", " ", m.group(0)), text)


@dataclass(frozen=True)
class Resugared:
    """A definition's text with uses of the user's macros written back."""

    text: str
    names: frozenset[str] = frozenset()
    """The macros written back, and those their arguments name."""
    spans: tuple[tuple[int, int], ...] = ()
    """Where, in ``text``: each span preprocesses to exactly the expanded text it replaced,
    and leaves no macro name behind (so nothing after it can join its expansion)."""

    def outside(self) -> str:
        """``text`` without the spans (the text hfuse wrote as it expanded it)."""
        out, at = [], 0
        for start, stop in self.spans:
            out.append(self.text[at:start])
            out.append(" ")
            at = stop
        return "".join(out) + self.text[at:]


def resugar(expanded: str, original: str, macros: Mapping[str, UserMacro],
            expander: _Expander | None = None) -> Resugared:
    """``expanded`` (hfuse's text of a definition) with the uses of ``macros`` that
    ``original`` (the user's text of it) spells put back where hfuse left their whole
    expansion unchanged. What else must hold for the fused file to mean ``expanded``
    (nothing else in the section names these macros) is ``MacroSections``' to prove.
    ``expander``: one with ``macros`` defined, if the caller keeps one."""
    if not macros or not original or not _names_any(original, macros):
        return Resugared(expanded)
    expander = expander or _Expander(macros.values())
    plain = _without_directives(original)
    written = tokens(plain)
    uses = _uses(written, macros)
    if not uses:
        return Resugared(expanded)
    sequence: list[str] = []
    spans: list[tuple[_Use, int, int]] = []
    at = 0
    for use in uses:
        sequence.extend(t.value for t in written[at:use.first])
        expansion = expander.expand(original[use.start:use.end])
        if not _names_any(" ".join(expansion), macros):  # (else a name left over could take what follows)
            spans.append((use, len(sequence), len(sequence) + len(expansion)))
        sequence.extend(expansion)
        at = use.last
    sequence.extend(t.value for t in written[at:])
    target = tokens(expanded)
    matched: dict[int, int] = {}
    for a, b, size in difflib.SequenceMatcher(None, sequence, [t.value for t in target], autojunk=False).get_matching_blocks():
        matched.update((a + k, b + k) for k in range(size))
    placed = set(matched.values())
    directives = [(m.start(), m.end()) for m in _DIRECTIVE_LINE.finditer(expanded)]
    edits: list[tuple[int, int, str, str]] = []
    for use, lo, hi in spans:
        if hi == lo or any(k not in matched for k in range(lo, hi)) or matched[hi - 1] - matched[lo] != hi - 1 - lo:
            continue
        first, last = matched[lo], matched[hi - 1]
        if (first > 0 and first - 1 not in placed) or (last + 1 < len(target) and last + 1 not in placed):
            continue  # a rewrite wrote right beside it (``hf_ctx.`` before ``threadIdx.x``): the use is no longer whole
        start, stop = target[first].start, target[last].end
        if any(a < stop and start < b for a, b in directives):
            continue  # a directive keeps hfuse's text (``#pragma unroll 4``)
        edits.append((start, stop, original[use.start:use.end], use.name))
    pieces, names, kept, end = [], set(), [], len(expanded)
    for start, stop, spelling, name in sorted(edits, reverse=True):
        if stop > end:
            continue
        pieces.append(expanded[stop:end])
        pieces.append(spelling)
        # the use and the macros its arguments name (``TABLE(uint32_t, grid, NGRID)``): each defined
        names.update({name, *(n for n in _IDENTIFIER.findall(_code(spelling)) if n in macros)})
        kept.append((start, stop, spelling))
        end = start
    pieces.append(expanded[:end])
    text = "".join(reversed(pieces))
    shifted, delta = [], 0
    for start, stop, spelling in reversed(kept):  # (in order: where each spelling landed in ``text``)
        shifted.append((start + delta, start + delta + len(spelling)))
        delta += len(spelling) - (stop - start)
    return Resugared(text, frozenset(names), tuple(shifted))


@dataclass
class MacroSections:
    """The user's macros of every input, and the original text of the files hfuse read:
    what ``section`` needs to give definitions their macros back."""

    macros: dict[Path, dict[str, UserMacro]] = field(default_factory=dict)
    """By file (a source and each header it read): the macros of the source that read it first."""
    texts: dict[Path, list[str]] = field(default_factory=dict)
    expanders: dict[frozenset[UserMacro], _Expander] = field(default_factory=dict)
    """One per set of macros (each costs a preprocessor): a request's sections share them."""
    lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)
    """The tuner emits candidates on a thread pool, and a preprocessor lexes one text at a time."""

    def __getstate__(self) -> dict:
        return {"macros": self.macros, "texts": self.texts}  # (no lock, no preprocessors: made again)

    def __setstate__(self, state: dict) -> None:
        self.__init__(**state)

    def _expander(self, macros: Iterable[UserMacro]) -> _Expander:
        key = frozenset(macros)
        if key not in self.expanders:
            self.expanders[key] = _Expander(sorted(key, key=lambda m: m.name))
        return self.expanders[key]

    @classmethod
    def of(cls, files: Sequence[SourceFile]) -> "MacroSections":
        sections = cls()
        for source in files:
            table = _keepable({m.name: m for m in source.user_macros})
            for path in (source.path, *source.headers):
                sections.macros.setdefault(Path(path).resolve(), table)
        return sections

    def original(self, path: Path, line: int, count: int) -> str:
        """Lines ``line``.. of the user's file, ``count`` of them and a few more: a use
        written over several lines is one line expanded."""
        resolved = Path(path).resolve()
        if resolved not in self.texts:
            try:
                self.texts[resolved] = read_source_file(resolved).splitlines()
            except HFuseError:  # (changed or gone since it was read: its definitions stay expanded)
                self.texts[resolved] = []
        lines = self.texts[resolved]
        return "\n".join(lines[max(line - 1, 0):line - 1 + count + 8])

    def section(self, definitions: Sequence[tuple[str, Path | None, int]]) -> tuple[list[str], list[str], list[str]]:
        """Definitions (expanded text, file, line) of one section of the fused file -> their
        texts, the ``#define`` lines to write before them and the ``#undef`` lines after."""
        with self.lock:
            return self._section(definitions)

    def _section(self, definitions: Sequence[tuple[str, Path | None, int]]) -> tuple[list[str], list[str], list[str]]:
        texts = [text for text, _, _ in definitions]
        candidates: list[Resugared] = []
        tables: list[dict[str, UserMacro]] = []
        for text, path, line in definitions:
            table = self.macros.get(Path(path).resolve(), {}) if path is not None else {}
            tables.append(table)
            candidates.append(resugar(text, self.original(path, line, text.count("\n") + 1), table,
                                      self._expander(table.values()))
                              if table and path is not None else Resugared(text))
        kept = [bool(c.names) for c in candidates]
        while any(kept):
            used, disagree = self._closure(candidates, tables, kept)
            names = {m.name for m in used}
            if any(not kept[i] and _names_any(_code(texts[i]), names) for i in range(len(texts))):
                break  # a definition written expanded names one of these macros: none kept here
            # the rest of a kept one must not name them either (then it preprocesses to its expanded text)
            failed = [i for i, c in enumerate(candidates)
                      if kept[i] and (i in disagree or _names_any(_code(c.outside()), names))]
            if not failed:
                order = sorted(used, key=lambda m: (str(m.file), m.line, m.name))
                return ([candidates[i].text if kept[i] else texts[i] for i in range(len(texts))],
                        [m.definition for m in order], [f"#undef {m.name}" for m in order])
            for i in failed:
                kept[i] = False
        return texts, [], []

    @staticmethod
    def _closure(candidates: Sequence[Resugared], tables: Sequence[Mapping[str, UserMacro]],
                 kept: Sequence[bool]) -> tuple[list[UserMacro], set[int]]:
        """The macros the kept definitions name, and those their values name in turn; and the
        definitions whose file defines one of them otherwise than the one written (two
        sources' headers: one section can define a name once)."""
        found: dict[str, UserMacro] = {}
        disagree: set[int] = set()
        for i, (candidate, table, keep) in enumerate(zip(candidates, tables, kept)):
            todo = list(candidate.names) if keep else []
            while todo:
                name = todo.pop()
                if name not in table:
                    continue
                if name in found:
                    if found[name].definition != table[name].definition:
                        disagree.add(i)
                    continue
                found[name] = table[name]
                todo.extend(_IDENTIFIER.findall(table[name].value))
        return list(found.values()), disagree
