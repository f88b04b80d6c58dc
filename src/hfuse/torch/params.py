"""A kernel's parameters as a PyTorch op sees them: which are tensors (and of which dtypes),
which are scalars (and how wide), and the op schema. Plain Python: no torch import, so the
mapping is tested where PyTorch is not installed.

The C types come from the front end's parameter declarations, template parameters
replaced by the instance's arguments (``T* x`` of ``scale<float>`` is a ``float*``).
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Literal, Sequence

from ..errors import HFuseError, Location
from ..frontend.model import Param

# C element type -> the torch dtypes (by name) whose memory it reads. Unsigned types also
# take the signed dtype of their width: PyTorch's unsigned support is partial.
POINTEE_DTYPES: dict[str, tuple[str, ...]] = {
    "float": ("float32",), "double": ("float64",),
    "half": ("float16",), "__half": ("float16",), "__nv_bfloat16": ("bfloat16",), "nv_bfloat16": ("bfloat16",),
    "__half2": ("float16",), "half2": ("float16",), "__nv_bfloat162": ("bfloat16",),
    "int": ("int32",), "signed": ("int32",), "signed int": ("int32",), "int32_t": ("int32",),
    "unsigned": ("uint32", "int32"), "unsigned int": ("uint32", "int32"), "uint32_t": ("uint32", "int32"),
    "long long": ("int64",), "long long int": ("int64",), "int64_t": ("int64",), "long": ("int64",),
    "unsigned long long": ("uint64", "int64"), "unsigned long long int": ("uint64", "int64"),
    "uint64_t": ("uint64", "int64"), "size_t": ("uint64", "int64"), "unsigned long": ("uint64", "int64"),
    "short": ("int16",), "int16_t": ("int16",), "unsigned short": ("uint16", "int16"), "uint16_t": ("uint16", "int16"),
    "char": ("int8", "uint8"), "signed char": ("int8",), "int8_t": ("int8",),
    "unsigned char": ("uint8",), "uint8_t": ("uint8",), "bool": ("bool",),
    "float2": ("float32",), "float4": ("float32",), "double2": ("float64",),
    "int2": ("int32",), "int4": ("int32",), "uint2": ("uint32", "int32"), "uint4": ("uint32", "int32"),
}
VECTOR_ALIGN = {"float2": 8, "float4": 16, "double2": 16, "int2": 8, "int4": 16, "uint2": 8, "uint4": 16,
                "__half2": 4, "half2": 4, "__nv_bfloat162": 4}

# C scalar type -> (schema type, NumPy dtype the kernel reads)
SCALARS: dict[str, tuple[str, str]] = {
    "int": ("int", "int32"), "signed": ("int", "int32"), "signed int": ("int", "int32"), "int32_t": ("int", "int32"),
    "unsigned": ("int", "uint32"), "unsigned int": ("int", "uint32"), "uint32_t": ("int", "uint32"),
    "long long": ("int", "int64"), "long long int": ("int", "int64"), "int64_t": ("int", "int64"),
    "long": ("int", "int64"), "unsigned long long": ("int", "uint64"), "unsigned long long int": ("int", "uint64"),
    "uint64_t": ("int", "uint64"), "size_t": ("int", "uint64"), "unsigned long": ("int", "uint64"),
    "short": ("int", "int16"), "int16_t": ("int", "int16"), "unsigned short": ("int", "uint16"),
    "uint16_t": ("int", "uint16"), "char": ("int", "int8"), "signed char": ("int", "int8"), "int8_t": ("int", "int8"),
    "unsigned char": ("int", "uint8"), "uint8_t": ("int", "uint8"),
    "float": ("float", "float32"), "double": ("float", "float64"), "bool": ("bool", "bool"),
}
_QUALIFIERS = re.compile(r"\b(const|volatile|__restrict__|__restrict|restrict|struct|__grid_constant__)\b")


@dataclass(frozen=True)
class OpParam:
    """One kernel parameter as the op takes it."""

    name: str
    """The op's argument name (``k0_table``: kernel index and parameter name)."""
    c_type: str
    kind: Literal["tensor", "scalar"]
    dtypes: tuple[str, ...] = ()
    """Tensors: the dtypes it may hold (empty: any, for a pointer to a type hfuse does not know)."""
    align: int = 1
    """Tensors: the byte alignment its data must have (16 for a ``float4*``)."""
    scalar: str = ""
    """Scalars: the NumPy dtype passed to the kernel."""
    schema_type: str = ""
    mutated: bool = False

    def schema(self, alias: int) -> str:
        if self.kind == "tensor":
            return f"Tensor(a{alias}!) {self.name}" if self.mutated else f"Tensor {self.name}"
        return f"{self.schema_type} {self.name}"


def c_type_of(param: Param, template: dict[str, str]) -> str:
    """The declared type without the name, qualifiers and default, template arguments put in."""
    text = param.declaration
    if param.name and param.name_start >= 0:
        text = text[: param.name_start] + text[param.name_start + len(param.name):]
    text = _QUALIFIERS.sub(" ", text)
    for name, value in template.items():
        text = re.sub(rf"\b{re.escape(name)}\b", value, text)
    text = re.sub(r"\s*\*\s*", "*", " ".join(text.split()))
    return text.strip()


def op_params(kernel_index: int, kernel: str, params: Sequence[Param], template: dict[str, str],
              outputs: Sequence[int], where: Location | None = None) -> list[OpParam]:
    """The op's view of one kernel's parameters; ``outputs`` are the ones it writes."""
    found = []
    for i, param in enumerate(params):
        c_type = c_type_of(param, template)
        name = f"k{kernel_index}_{param.name or f'arg{i}'}"
        if c_type.endswith("*"):
            pointee = c_type.rstrip("*").strip()
            if c_type.count("*") > 1:
                raise HFuseError(f"parameter {i} of '{kernel}' is '{c_type}', a pointer to pointers; a tensor cannot "
                                 "stand for it", where, hint="pass a flat buffer and offsets instead")
            dtypes = () if pointee in ("void", "") else POINTEE_DTYPES.get(pointee, ())
            found.append(OpParam(name, c_type, "tensor", dtypes, VECTOR_ALIGN.get(pointee, 1),
                                 mutated=i in outputs))
        elif c_type in SCALARS:
            if i in outputs:
                raise HFuseError(f"parameter {i} of '{kernel}' is a {c_type} passed by value; it cannot be an output",
                                 where)
            schema_type, dtype = SCALARS[c_type]
            found.append(OpParam(name, c_type, "scalar", scalar=dtype, schema_type=schema_type))
        else:
            raise HFuseError(f"parameter {i} of '{kernel}' has type '{c_type}', which a PyTorch op cannot pass",
                             where, hint="hfuse.torch takes pointers (tensors) and arithmetic scalars")
    return found


def op_schema(op_name: str, params: Sequence[OpParam]) -> str:
    """``name(Tensor k0_x, Tensor(a0!) k0_y, int k0_n, ...) -> ()``: written tensors aliased and mutated."""
    aliases = iter(range(len(params)))
    args = [p.schema(next(aliases) if p.mutated else -1) for p in params]
    return f"{op_name}({', '.join(args)}) -> ()"
