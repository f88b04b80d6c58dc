"""The pieces every layout's ``__global__`` kernel is made of: its declaration (the
parts' parameters, then the hidden grids and shared-memory offsets), the call of one
part's body with that part's context, and the test that a fused block is inside a part's grid.

A padded part (a block that is not a warp multiple, see ``hfuse/partition.py``) calls its
body only for its real threads; its padding threads skip it.
"""
from __future__ import annotations

from typing import Sequence

from ..codegen.signature import PartSignature
from ..partition import Partition
from ..spec import Dim3

SMEM = "hfuse_smem"


def smem_declaration(sigs: Sequence[PartSignature]) -> str:
    """The fused kernel's dynamic shared memory, aligned for the most demanding part."""
    alignment = max([16, *(s.smem_align for s in sigs)])
    return f"  extern __shared__ __align__({alignment}) unsigned char {SMEM}[];"


def thread_index(local: str, block: Dim3) -> str:
    bx, by = block.x, block.y
    if block.rank == 1:
        return f"make_uint3({local}, 0u, 0u)"
    if block.rank == 2:
        return f"make_uint3({local} % {bx}u, {local} / {bx}u, 0u)"
    return f"make_uint3({local} % {bx}u, {local} / {bx}u % {by}u, {local} / {bx * by}u)"


def part_call(sig: PartSignature, body_name: str, local: str, indent: str) -> str:
    b = sig.part.block
    gx, gy, gz, smem = (sig.hidden_name(w) for w in ("grid_x", "grid_y", "grid_z", "smem"))
    targs = f"<{', '.join(sig.template_args)}>" if sig.template_args else ""
    args = ", ".join([*sig.call_arguments, "hf_ctx"])
    return (
        f"{indent}const hfuse_ctx hf_ctx = {{\n"
        f"{indent}    {thread_index(local, b)},\n"
        f"{indent}    make_uint3({b.x}u, {b.y}u, {b.z}u),\n"
        f"{indent}    make_uint3(hf_block % {gx}, hf_block / {gx} % {gy}, hf_block / ({gx} * {gy})),\n"
        f"{indent}    make_uint3({gx}, {gy}, {gz}),\n"
        f"{indent}    {SMEM} + {smem}}};\n"
        f"{indent}{body_name}{targs}({args});\n"
    )


def in_grid(sig: PartSignature) -> str:
    gx, gy, gz = (sig.hidden_name(w) for w in ("grid_x", "grid_y", "grid_z"))
    return f"hf_block < {gx} * {gy} * {gz}"


def declaration(name: str, partition: Partition, sigs: list[PartSignature], launch_bounds: str) -> str:
    params = [p for s in sigs for p in s.params] + [h for s in sigs for h in s.hidden]
    headers = [s.template_header for s in sigs if s.template_header]
    if headers:
        merged = ", ".join(h.split("<", 1)[1].rsplit(">", 1)[0] for h in headers)
        head = f"template <{merged}>\n__global__ void"
    else:
        head = 'extern "C" __global__ void'
    bounds = f" {launch_bounds}" if launch_bounds else ""
    joined = ",\n    ".join(params)
    return f"{head}{bounds}\n{name}(\n    {joined})"


def set_registers(budget: int, entry: int) -> str:
    """A warpgroup's ``setmaxnreg`` from the entry count to ``budget`` (empty when equal)."""
    if budget == entry:
        return ""
    way = "inc" if budget > entry else "dec"
    return (f'    asm volatile("setmaxnreg.{way}.sync.aligned.u32 {budget};\\n" ::: "memory");'
            f"  // {budget} registers per thread here (entry {entry})")


SM90A_ONLY = ("#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
              '#error "this fused kernel sets per-part register budgets with setmaxnreg: compile it for sm_90a alone '
              '(-gencode arch=compute_90a,code=sm_90a; nvcc 13 -arch=sm_90a -c also compiles a compute_90 pass)"\n'
              "#endif\n")
