"""Code hfuse keeps as an ``#include`` and cannot rewrite: which names of it read the block.

CUB's block-wide collectives compute each thread's items from the raw ``threadIdx`` and
synchronise the whole block inside CUB's headers; fused beside another kernel, such a
kernel computes wrong results without any error (seen: an int8 dequantisation kernel
placed second, 16,199 of 16,384 outputs wrong). Whether a name is one of them is a
question of *meaning*, not spelling: ``cub::BlockReduce``, ``mycub::BlockReduce`` after
``namespace mycub = cub;``, ``BlockReduce`` after ``using cub::BlockReduce;`` or
``using namespace cub;``, a typedef or alias template of one, a struct that holds one, and
a macro expanding to one (macros are expanded before parsing) all mean the same.

Names inside namespace ``cub`` are classified by what CUB documents them to be: the
block-, agent-, grid- and device-level families synchronise or read the block, and are
refused; the warp-level ones use the lane id (``%laneid``), which a warp-aligned part
keeps, and thread-level utilities, functors, traits and enum constants read nothing, so
they are allowed. Any other CUB name is refused too: hfuse cannot see inside CUB, so
what it does not know to be safe it treats as unsafe.

Block-level code (CUB's block collectives) is still correct where a fused block runs one whole block of the kernel on its
first threads while the block's other threads are gone: ``Unseen.whole_block``, which the
one-part-per-block layouts take (``Layout.keeps_block_whole``).

A program declaration (typedef, alias, struct, ``using`` declaration) that names a
refused entity is refused in turn, transitively; so is one that aliases cooperative
groups' ``thread_block``, which the cooperative-groups rewrite recognises only as written.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Iterable, Mapping

from ..frontend.model import Scope, TopLevelItem, scope_names
from ..frontend.resolve import LocalNames, Resolver, using_declaration
from ..frontend.parse import compact

CUB = "cub"

_BLOCK_WIDE = re.compile(r"^(Block\w*|CTA_SYNC\w*|RowMajorTid|WarpId)$")
"""CUB's block-level families: they read ``threadIdx`` (``WarpId``: the hardware warp slot)
and synchronise the whole block. Correct where a fused block runs one whole block of the
kernel on its first threads, the others gone (the one-part-per-block layouts)."""
_GRID_WIDE = re.compile(r"^(Agent\w*|Grid\w*|Device\w*|Dispatch\w*)$")
"""CUB's agent, grid and device levels: they also read ``blockIdx``/``gridDim``, which no layout keeps."""
_SAFE = re.compile(
    r"^(Warp\w*|Thread\w*|LaneId|LaneMask\w*|Shuffle\w*|LoadDirect\w*|StoreDirect\w*|Sum|Max|Min|ArgMax|ArgMin|"
    r"Equality|Inequality|InequalityWrapper|CastOp|KeyValuePair|Traits|NumericTraits|BaseTraits|FpLimits|"
    r"Uninitialized|NullType|Int2Type|If|Equals|Log2|PowerOfTwo|CacheLoadModifier|CacheStoreModifier|"
    r"DivideAndRoundUp|BFE|BFI|IADD3|SHR_ADD|SHL_ADD|PRMT|min|max|[A-Z][A-Z0-9_]*)$")
"""Warp-level primitives (correct in a warp-aligned part: they use the lane id), thread-level
utilities, functors, traits, PTX intrinsics and enum constants (``BLOCK_LOAD_VECTORIZE``)."""
_INNER_NAMESPACE = re.compile(r"^(detail|CUB_\w*_NS|__\w+)$")

_CG_BLOCK = ("thread_block", "this_thread_block")

REFUSAL_HINT = "keep this kernel unfused; CUB's warp-level primitives (cub::WarpReduce, ...) fuse"
WHOLE_BLOCK_HINT = ("a layout that runs one whole block of the kernel per fused block takes it: --layout interblock, "
                    "interleaved or dynamic (hfuse fuse picks interblock itself when no layout is given)")


def plain_name(written: str) -> str:
    """``written`` without its template arguments (``cub::BlockStore<T, (D > 0) ? 2 : 1>`` is
    ``cub::BlockStore``). A comparison in a template argument is in parentheses (C++ closes
    the list at a bare ``>``): their contents go first, so that theirs is no bracket."""
    text = compact(written).replace("template", "")
    while "(" in text:
        stripped = re.sub(r"\([^()]*\)", "", text)
        if stripped == text:
            break
        text = stripped
    while "<" in text:
        stripped = re.sub(r"<[^<>]*>", "", text)
        if stripped == text:
            break
        text = stripped
    return text


@dataclass(frozen=True)
class Unseen:
    """Code a name reaches that hfuse cannot rewrite."""

    why: str
    whole_block: bool
    """Correct where a fused block runs one whole block of the kernel (``Layout.keeps_block_whole``)."""
    own_block: bool = False
    """It reads ``blockDim`` too: correct only where that whole block is also the kernel's own size."""
    hint: str = ""
    """What the user can do where it is refused (empty: keep the kernel unfused, ``REFUSAL_HINT``)."""


def classify_cub(name: str) -> Unseen | None:
    """What CUB's ``name`` (the entity right below namespace ``cub``) does that hfuse cannot
    rewrite, or None for what a warp-aligned part may use anywhere."""
    if _BLOCK_WIDE.match(name):
        return Unseen(f"CUB's block-wide 'cub::{name}' (it reads threadIdx and synchronises the whole block inside "
                      "CUB's headers, which hfuse does not rewrite)", whole_block=True)
    if _GRID_WIDE.match(name):
        return Unseen(f"CUB's grid-level 'cub::{name}' (it reads blockIdx and gridDim inside CUB's headers)",
                      whole_block=False)
    if _SAFE.match(name):
        return None
    return Unseen(f"CUB's 'cub::{name}', which hfuse does not know to be warp- or thread-level (it cannot see inside "
                  "CUB's headers, so it treats what it does not know as reading the block)", whole_block=False)


def cub_entity(qualified: str) -> str | None:
    """The entity a namespace-resolved name (``cub::BlockReduce::TempStorage``) names right
    below ``cub``, skipping CUB's inner namespaces; None when it is not in CUB. CUB may be
    wrapped in a namespace of the user's (``#define CUB_WRAPPED_NAMESPACE mylib`` puts it in
    ``mylib::cub``, which ``CUB_NS_QUALIFIER`` names): a ``cub`` below other namespaces is
    taken for CUB too (a namespace of the user's of that name is refused as CUB: the safe
    way round)."""
    parts = [p for p in qualified.split("::") if p]
    at = next((i for i, p in enumerate(parts[:-1]) if p in (CUB, "CUB_NS_QUALIFIER")), None)
    if at is None:
        return None
    rest = [p for p in parts[at + 1:] if not _INNER_NAMESPACE.match(p)]
    return rest[0] if rest else None


@dataclass(frozen=True)
class OpaqueNames:
    """What of a program reaches code hfuse cannot rewrite, for ``reason`` to look names up."""

    resolver: Resolver
    declarations: Mapping[str, Unseen]
    """Program keys (typedefs, aliases, structs) that name such code -> what."""
    using_declarations: Mapping[tuple[str, str], str]
    """(namespace key, name) -> what ``using X::name;`` there brings in, as written."""

    def reason(self, scope: Scope, written: str, local: LocalNames = LocalNames(),
               local_usings: Mapping[str, str] | None = None, unqualified: bool = False) -> Unseen | None:
        """What code hfuse cannot rewrite the name ``written`` in ``scope`` reaches (None: none).

        ``unqualified``: the node is a lone identifier (not the head of a qualified name)."""
        text = plain_name(written)
        if not text:
            return None
        parts = [p for p in text.split("::") if p]
        if "::" in text:
            entity = cub_entity(self.resolver.namespace(scope, text, local))
            if entity is not None:
                return classify_cub(entity)
        else:
            target = (local_usings or {}).get(text) or self._using(scope, text)
            if target is not None:
                entity = cub_entity(self.resolver.namespace((), plain_name(target), LocalNames()))
                if entity is not None:
                    return classify_cub(entity)
            if (unqualified and (_BLOCK_WIDE.match(text) or _GRID_WIDE.match(text)) and self._cub_nominated(scope, local)
                    and self.resolver.resolve(scope, text, local) is None):
                return classify_cub(text)
        if not self.declarations:
            return None
        for i in range(len(parts), 0, -1):
            key = self.resolver.resolve(scope, ("::" if text.startswith("::") else "") + "::".join(parts[:i]), local)
            if key is not None and key in self.declarations:
                return self.declarations[key]
        return None

    def _using(self, scope: Scope, name: str) -> str | None:
        named = list(scope_names(scope))
        for depth in range(len(named), -1, -1):
            target = self.using_declarations.get(("::".join(named[:depth]), name))
            if target is not None:
                return target
        return None

    def _cub_nominated(self, scope: Scope, local: LocalNames) -> bool:
        named = list(scope_names(scope))
        levels = ["::".join(named[:d]) for d in range(len(named), -1, -1)]
        written = [w for level in levels for w in self.resolver.usings.get(level, [])] + list(local.usings)
        return any(self.resolver.namespace(scope, w, local).split("::")[0] == CUB for w in written)


def _cg_block_alias(item: TopLevelItem, resolver: Resolver) -> bool:
    """A ``typedef``/``using`` alias of cooperative groups' thread_block (in a class too). A
    class that only takes one in its members' parameters (DeepSpeed's ``GroupStats``) names
    no alias: its members are read as any function (given the part's block where it is
    called with one, or refused)."""
    if not re.search(r"\b(typedef|using)\b", item.text):
        return False
    for written in item.references:
        text = plain_name(written)
        head, _, tail = text.rpartition("::")
        if tail in _CG_BLOCK and head and resolver.is_cooperative_groups(item.scope, head):
            return True
    return False


def opaque_names(items: Iterable[TopLevelItem], resolver: Resolver) -> OpaqueNames:
    """The program's declarations that name code hfuse cannot rewrite (a fixed point:
    a typedef of a typedef of ``cub::BlockReduce`` is found too)."""
    items = [i for i in items if i.kind == "declaration" and i.function is None]
    usings: dict[tuple[str, str], str] = {}
    for item in items:
        if (target := using_declaration(item.text)) is not None:
            usings[("::".join(scope_names(item.scope)), target.split("::")[-1])] = target
    declarations: dict[str, Unseen] = {}
    changed = True
    while changed:
        changed = False
        current = OpaqueNames(resolver, dict(declarations), usings)
        for item in items:
            if not item.keys or all(k in declarations for k in item.keys):
                continue
            found = None
            if _cg_block_alias(item, resolver):
                # refused by every layout: the rewrite of cg::this_thread_block() (which every
                # layout applies) would no longer convert to the alias's type
                found = Unseen(f"'{item.keys[0]}' ({item.file.name}:{item.line}) stands for cooperative groups' "
                               "thread_block, which hfuse rewrites only where it is written as such", whole_block=False)
            else:
                for written in sorted(item.references):
                    if written in item.names:
                        continue
                    inner = current.reason(item.scope, written)
                    if inner is not None:
                        found = Unseen(f"'{item.keys[0]}' ({item.file.name}:{item.line}) stands for {inner.why}",
                                       inner.whole_block)
                        break
            if found is not None:
                for key in item.keys:
                    declarations.setdefault(key, found)
                changed = True
    return OpaqueNames(resolver, declarations, usings)
