"""Parameters of the fused kernel: each part's own (renamed), then its launch geometry."""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from typing import Mapping

from ..partition import Part
from ..transform.context_types import names_a_scope


@dataclass(frozen=True)
class PartSignature:
    part: Part
    params: tuple[str, ...]
    """Declarations of the part's kernel parameters, renamed ``hf<i>_<name>``."""
    names: tuple[str, ...]
    template_args: tuple[str, ...]
    """What the body call is instantiated with (given arguments or renamed parameters)."""
    template_header: str
    """Non-empty when the part's template arguments were not given."""
    smem_align: int = 16
    """Where the part's slice of dynamic shared memory must start: a multiple of this (its
    ``extern __shared__ __align__(128)`` array, a ``double4`` one: 32; at least 16)."""
    arguments: tuple[str, ...] = ()
    """What the body call passes for each parameter (empty: ``names``): an object the host
    made of a type the part has a copy of is converted (``Scale__hf1(hf_ctx, hf1_op)``)."""

    @property
    def call_arguments(self) -> tuple[str, ...]:
        return self.arguments or self.names

    @property
    def hidden(self) -> tuple[str, ...]:
        return tuple(f"unsigned {self.hidden_name(what)}" for what in ("grid_x", "grid_y", "grid_z", "smem"))

    def hidden_name(self, what: str) -> str:
        """The name of what hfuse adds for the part (its grid, its slice of shared memory):
        ``hf_grid_x2``, never the ``hf2_<name>`` a parameter of the user's becomes (mmcv's
        ``grid_x`` parameter was ``hf2_grid_x`` twice)."""
        return f"hf_{what}{self.part.index}"


def _substitute(text: str, mapping: dict[str, str]) -> str:
    mapping = {k: v for k, v in mapping.items() if k}  # an unnamed parameter is named nowhere
    if not mapping:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in mapping) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def _expand_pack(declared: str, pack: str, types: tuple[str, ...], name: str) -> list[tuple[str, str]]:
    """``const Ins* __restrict__... ins`` for Ins = (float, int): one parameter per type,
    ``(const float* __restrict__ ins0, ins0), (const int* __restrict__ ins1, ins1)``. Before
    a type written as a declarator (``float*``), a qualifier goes after it, so that it
    qualifies the whole type (``const Ins`` of ``float*`` is ``float* const``, not ``const float*``)."""
    text = declared.replace("...", " ", 1)
    east = re.sub(rf"\b((?:(?:const|volatile)\s+)+)({re.escape(pack)})\b",
                  lambda m: f"{m.group(2)} {' '.join(m.group(1).split())}", text)
    out = []
    for j, written in enumerate(types):
        one = " ".join(_substitute(east if re.search(r"[*&\[(]", written) else text, {pack: written}).split())
        out.append((re.sub(rf"\b{re.escape(name)}\b\s*$", f"{name}{j}", one.rstrip()), f"{name}{j}"))
    return out


def part_signature(part: Part, renamed: Mapping[str, str] | None = None,
                   host_made: frozenset[str] = frozenset()) -> PartSignature:
    """``renamed``: the types the part has its own copy of (``Params`` -> ``Params__hf2``);
    ``host_made``: types of which the kernel takes host-made objects that the part's body
    takes as its copy (``transform/context_types.py``): the fused kernel's parameter has
    the host's layout (``Scale__hf2_host``), converted where the body is called."""
    kernel, i = part.kernel, part.index
    given = kernel.complete_template_args(part.spec.template_args)
    pack = kernel.template_pack
    fixed = len(kernel.template_params) - (pack is not None)
    if pack is not None and given and len(given) >= fixed:
        pack_types = tuple(given[fixed:])
    elif kernel.template_params and given and len(given) != len(kernel.template_params):
        from ..errors import HFuseError, Location

        raise HFuseError(
            f"{len(given)} template arguments given but the kernel has {len(kernel.template_params)} "
            f"template parameters ({', '.join(kernel.template_params)})",
            Location(kernel.file, kernel.line, kernel.name),
        )
    if pack is not None and given:
        mapping, header, targs = dict(zip(kernel.template_params[:fixed], given)), "", given
    elif kernel.template_params and given:
        mapping, header, targs = dict(zip(kernel.template_params, given)), "", given
    elif kernel.template_params:
        mapping = {p: f"hf{i}_{p}" for p in kernel.template_params}
        header, targs = _substitute(kernel.template_header, mapping), tuple(mapping.values())
    else:
        mapping, header, targs = {}, "", ()
    if given:
        # the arguments name the part's own copies too: kTile, its file's, is kTile__hf1 here, and a
        # plain kTile in the fused kernel could be another's (a library's, after its using-directive);
        # so do the parameters they are substituted into (F f, F = Saxpy: Saxpy__hf2 f)
        targs = tuple(_substitute(a, dict(renamed or {})) for a in targs)
        mapping = {p: _substitute(a, dict(renamed or {})) for p, a in mapping.items()}
    mapping = {**(renamed or {}), **mapping}
    params, names = [], []
    for j, param in enumerate(kernel.params):
        if param.text.strip() == "void":
            continue
        name = f"hf{i}_{param.name}" if param.name else f"hf_arg{i}_{j}"  # (no user's name is hf_...)
        declared = param.renamed(name)
        if pack is not None and given and "..." in param.text and re.search(rf"\b{pack}\b", param.text):
            for one, one_name in _expand_pack(declared, pack, pack_types, name):
                params.append(_substitute(one, mapping))
                names.append(one_name)
            continue
        if param.name is not None:
            head = declared[: param.name_start]
            declared = _substitute(head, mapping) + declared[param.name_start :]
        else:
            declared = _substitute(declared, mapping)
        params.append(declared)
        names.append(name)
    if host_made:
        return _host_made(PartSignature(part, tuple(params), tuple(names), tuple(targs), header), host_made)
    return PartSignature(part, tuple(params), tuple(names), tuple(targs), header)


def _host_made(sig: PartSignature, types: frozenset[str]) -> PartSignature:
    i = sig.part.index
    types_named = re.compile(r"\b(" + "|".join(re.escape(t) for t in sorted(types)) + r")\b")
    params, arguments = [], []
    for declared, name in zip(sig.params, sig.names):
        head = declared[: declared.rfind(name)]
        if all(names_a_scope(head, m.end()) for m in types_named.finditer(head)):
            # (none, or only as the scope of a member type: ``typename Traits<128>::input_t*`` is the copy's)
            params.append(types_named.sub(lambda m: f"{m.group(1)}__hf{i}", head) + declared[len(head):])
            arguments.append(name)
            continue
        params.append(types_named.sub(lambda m: f"{m.group(1)}__hf{i}_host", head) + declared[len(head):])
        copy = re.sub(r"\b(const|volatile|__restrict__|__grid_constant__|struct|class|typename)\b", " ", head)
        copy = " ".join(types_named.sub(lambda m: f"{m.group(1)}__hf{i}", copy).split())
        arguments.append(f"{copy}(hf_ctx, {name})")
    targs = tuple(types_named.sub(lambda m: f"{m.group(1)}__hf{i}", a) for a in sig.template_args)
    return replace(sig, params=tuple(params), template_args=targs, arguments=tuple(arguments))
