"""Parameters of the fused kernel: each part's own (renamed), then its launch geometry."""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..partition import Part


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

    @property
    def hidden(self) -> tuple[str, ...]:
        i = self.part.index
        return (f"unsigned hf{i}_grid_x", f"unsigned hf{i}_grid_y", f"unsigned hf{i}_grid_z", f"unsigned hf{i}_smem")

    def hidden_name(self, what: str) -> str:
        return f"hf{self.part.index}_{what}"


def _substitute(text: str, mapping: dict[str, str]) -> str:
    if not mapping:
        return text
    pattern = re.compile(r"\b(" + "|".join(re.escape(k) for k in mapping) + r")\b")
    return pattern.sub(lambda m: mapping[m.group(1)], text)


def part_signature(part: Part) -> PartSignature:
    kernel, i = part.kernel, part.index
    given = kernel.complete_template_args(part.spec.template_args)
    if kernel.template_params and given and len(given) != len(kernel.template_params):
        from ..errors import HFuseError, Location

        raise HFuseError(
            f"{len(given)} template arguments given but the kernel has {len(kernel.template_params)} "
            f"template parameters ({', '.join(kernel.template_params)})",
            Location(kernel.file, kernel.line, kernel.name),
        )
    if kernel.template_params and given:
        mapping, header, targs = dict(zip(kernel.template_params, given)), "", given
    elif kernel.template_params:
        mapping = {p: f"hf{i}_{p}" for p in kernel.template_params}
        header, targs = _substitute(kernel.template_header, mapping), tuple(mapping.values())
    else:
        mapping, header, targs = {}, "", ()
    params, names = [], []
    for j, param in enumerate(kernel.params):
        if param.text.strip() == "void":
            continue
        name = f"hf{i}_{param.name or f'arg{j}'}"
        declared = param.renamed(name)
        if param.name is not None:
            head = declared[: param.name_start]
            declared = _substitute(head, mapping) + declared[param.name_start :]
        else:
            declared = _substitute(declared, mapping)
        params.append(declared)
        names.append(name)
    return PartSignature(part, tuple(params), tuple(names), tuple(targs), header)
