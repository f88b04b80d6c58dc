"""The fused ``__global__`` kernels: horizontal (paper Algorithm 1) and vertical.

A padded part (a block that is not a warp multiple, see transform/partition.py) calls
its body only for its real threads; its padding threads skip it and, nothing running
after the parts, exit, so its named barriers (counted in warps) complete as natively.
"""
from __future__ import annotations

from ..spec import Dim3
from ..transform.partition import Partition
from .signature import PartSignature

SMEM = "hfuse_smem"


def _thread_index(local: str, block: Dim3) -> str:
    bx, by = block.x, block.y
    if block.rank == 1:
        return f"make_uint3({local}, 0u, 0u)"
    if block.rank == 2:
        return f"make_uint3({local} % {bx}u, {local} / {bx}u, 0u)"
    return f"make_uint3({local} % {bx}u, {local} / {bx}u % {by}u, {local} / {bx * by}u)"


def _part_call(sig: PartSignature, body_name: str, local: str, indent: str) -> str:
    b = sig.part.block
    gx, gy, gz, smem = (sig.hidden_name(w) for w in ("grid_x", "grid_y", "grid_z", "smem"))
    targs = f"<{', '.join(sig.template_args)}>" if sig.template_args else ""
    args = ", ".join([*sig.names, "hf_ctx"])
    return (
        f"{indent}const hfuse_ctx hf_ctx = {{\n"
        f"{indent}    {_thread_index(local, b)},\n"
        f"{indent}    make_uint3({b.x}u, {b.y}u, {b.z}u),\n"
        f"{indent}    make_uint3(hf_block % {gx}, hf_block / {gx} % {gy}, hf_block / ({gx} * {gy})),\n"
        f"{indent}    make_uint3({gx}, {gy}, {gz}),\n"
        f"{indent}    {SMEM} + {smem}}};\n"
        f"{indent}{body_name}{targs}({args});\n"
    )


def _in_grid(sig: PartSignature) -> str:
    gx, gy, gz = (sig.hidden_name(w) for w in ("grid_x", "grid_y", "grid_z"))
    return f"hf_block < {gx} * {gy} * {gz}"


def _declaration(name: str, partition: Partition, sigs: list[PartSignature], launch_bounds: str) -> str:
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


def _set_registers(budget: int, entry: int) -> str:
    """A warpgroup's ``setmaxnreg`` from the entry count to ``budget`` (empty when equal)."""
    if budget == entry:
        return ""
    way = "inc" if budget > entry else "dec"
    return (f'    asm volatile("setmaxnreg.{way}.sync.aligned.u32 {budget};\\n" ::: "memory");'
            f"  // {budget} registers per thread here (entry {entry})")


SM90A_ONLY = ("#if defined(__CUDA_ARCH__) && !defined(__CUDA_ARCH_FEAT_SM90_ALL)\n"
              '#error "this fused kernel sets per-part register budgets with setmaxnreg: compile it for sm_90a"\n'
              "#endif\n")


def horizontal_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str], launch_bounds: str,
                      budgets: tuple[tuple[int, ...], int] | None = None) -> str:
    """``budgets``: each part's registers per thread and the entry count, for ``setmaxnreg``
    on entry to each part (whole warpgroups, checked by ``WarpgroupRegisters``)."""
    lines = [SM90A_ONLY] if budgets else []
    lines.append(_declaration(name, partition, sigs, launch_bounds) + " {")
    lines.append(f"  extern __shared__ __align__(16) unsigned char {SMEM}[];")
    lines.append("  const unsigned hf_block = blockIdx.x;")
    for n, (sig, body) in enumerate(zip(sigs, bodies)):
        part = sig.part
        end = part.offset + part.size
        last = n == len(sigs) - 1
        test = "" if last else f"if (threadIdx.x < {end}u) "
        keyword = "" if n == 0 else "else "
        lines.append(f"  {keyword}{test}{{  // part {part.index}: {part.spec.name}, threads [{part.offset}, {end}), block {part.block}")
        if budgets and (change := _set_registers(budgets[0][n], budgets[1])):
            lines.append(change)  # by every thread of the part's warpgroups, before any of them can leave
        lines.append(f"    if ({_in_grid(sig)}) {{")
        local = "threadIdx.x" if part.offset == 0 else f"(threadIdx.x - {part.offset}u)"
        lines.append(f"      const unsigned hf_tid = {local};")
        if part.padding:
            lines.append(f"      if (hf_tid < {part.threads}u) {{  // threads [{part.threads}, {part.size}) of the part are padding: they exit")
            lines.append(_part_call(sig, body, "hf_tid", "        ").rstrip("\n"))
            lines.append("      }")
        else:
            lines.append(_part_call(sig, body, "hf_tid", "      ").rstrip("\n"))
        lines.append("    }")
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"


def vertical_kernel(name: str, partition: Partition, sigs: list[PartSignature], bodies: list[str], launch_bounds: str) -> str:
    lines = [_declaration(name, partition, sigs, launch_bounds) + " {"]
    lines.append(f"  extern __shared__ __align__(16) unsigned char {SMEM}[];")
    lines.append("  const unsigned hf_block = blockIdx.x;")
    by_part = {sig.part.index: (sig, body) for sig, body in zip(sigs, bodies)}
    for part in partition.execution_order:  # a padded part last: its padding threads then exit
        sig, body = by_part[part.index]
        padding = f" ({part.threads} threads + {part.padding} padding, run last)" if part.padding else ""
        lines.append(f"  // part {part.index}: {part.spec.name}, threads [0, {part.size}), block {part.block}{padding}")
        lines.append(f"  if (threadIdx.x < {part.threads}u && {_in_grid(sig)}) {{")
        lines.append("    const unsigned hf_tid = threadIdx.x;")
        lines.append(_part_call(sig, body, "hf_tid", "    ").rstrip("\n"))
        lines.append("  }")
    lines.append("}")
    return "\n".join(lines) + "\n"
