"""Host-side launch helper: launch the fused kernel as if launching the originals.

The caller passes what it would pass to each original launch (grid, arguments, dynamic
shared memory) and a stream; the helper works out the fused grid, the shared-memory
slices and the hidden parameters. The same arithmetic lives in ``FusedKernel.pack`` for
Python callers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from ..spec import Dim3
from .signature import PartSignature

SMEM_ALIGN = 16


@dataclass(frozen=True)
class FusedLaunch:
    """Everything a runtime needs to launch the fused kernel once."""

    grid: Dim3
    block: Dim3
    args: tuple[Any, ...]
    shared_mem: int


def _up(value: int, alignment: int) -> int:
    return (value + alignment - 1) // alignment * alignment


def smem_offsets(smems: Sequence[int], alignments: Sequence[int] = ()) -> tuple[list[int], int]:
    """Each part's offset into dynamic shared memory (a multiple of its alignment, at least
    16 bytes), and the total."""
    offsets, total = [], 0
    for i, size in enumerate(smems):
        offset = _up(total, max(SMEM_ALIGN, alignments[i] if i < len(alignments) else SMEM_ALIGN))
        offsets.append(offset)
        total = _up(offset + int(size), SMEM_ALIGN)
    return offsets, total


def pack_launch(block_threads: int, args_per_kernel: Sequence[Sequence[Any]], grids: Sequence[Dim3],
                smems: Sequence[int], blocks_add_up: bool = False, alignments: Sequence[int] = (),
                grid_limit: int | None = None) -> FusedLaunch:
    """The Python twin of the C++ launch helper: original launches in, fused launch out.
    ``blocks_add_up``: the layout puts the parts' blocks one after another in the fused grid.
    ``alignments``: each part's slice alignment (``PartSignature.smem_align``).
    ``grid_limit``: at most this many fused blocks (a persistent layout's SMs x blocks per SM)."""
    grids = [Dim3.of(g) for g in grids]
    offsets, total = smem_offsets(smems, alignments)
    hidden: list[Any] = []
    for grid, offset in zip(grids, offsets):
        hidden += [np.uint32(grid.x), np.uint32(grid.y), np.uint32(grid.z), np.uint32(offset)]
    flat = tuple(a for args in args_per_kernel for a in args) + tuple(hidden)
    sizes = [g.size for g in grids]
    blocks = sum(sizes) if blocks_add_up else max(sizes)
    if grid_limit is not None:
        blocks = max(1, min(blocks, grid_limit))
    return FusedLaunch(Dim3(blocks), Dim3(block_threads), flat, total)


def launcher(kernel_name: str, block_threads: int, sigs: list[PartSignature], blocks_add_up: bool = False,
             blocks_per_sm: int | None = None) -> str:
    """The C++ launch helper; ``blocks_per_sm``: a persistent layout's grid, SMs x this (at most)."""
    templated = any(s.template_header for s in sigs)
    params = []
    for s in sigs:
        params.append(f"dim3 {s.hidden_name('grid')}")
        # __grid_constant__ belongs to a kernel's parameters, not to a host function's
        params.extend(re.sub(r"\b__grid_constant__\b\s*", "", p) for p in s.params)
        params.append(f"size_t {s.hidden_name('dynamic_smem')}")
    params.append("cudaStream_t stream = 0")
    head = ""
    instance = kernel_name
    if templated:
        merged = ", ".join(h.split("<", 1)[1].rsplit(">", 1)[0] for s in sigs if (h := s.template_header))
        head = f"template <{merged}>\n"
        names = [a for s in sigs if s.template_header for a in s.template_args]
        instance = f"{kernel_name}<{', '.join(names)}>"
    body = []
    body.append("  unsigned long long hf_blocks = 0;")
    body.append("  size_t hf_smem = 0;")
    for s in sigs:
        grid, blocks, smem = s.hidden_name("grid"), s.hidden_name("blocks"), s.hidden_name("smem")
        body.append(f"  const unsigned long long {blocks} = (unsigned long long){grid}.x * {grid}.y * {grid}.z;")
        body.append(f"  hf_blocks += {blocks};" if blocks_add_up else f"  if ({blocks} > hf_blocks) hf_blocks = {blocks};")
        align = max(SMEM_ALIGN, s.smem_align)  # hf_smem is a multiple of 16 already
        start = "hf_smem" if align == SMEM_ALIGN else f"((hf_smem + {align - 1}) / {align} * {align})"
        body.append(f"  const unsigned {smem} = (unsigned){start};")
        body.append(f"  hf_smem = ({smem} + {s.hidden_name('dynamic_smem')} + {SMEM_ALIGN - 1}) / {SMEM_ALIGN} * {SMEM_ALIGN};")
    body.append("  if (hf_blocks == 0) return cudaSuccess;")
    if blocks_per_sm:
        body.append("  {  // persistent blocks: SMs x blocks per SM at most")
        body.append("    int hf_device = 0, hf_sms = 0;")
        body.append("    cudaError_t hf_err = cudaGetDevice(&hf_device);")
        body.append("    if (hf_err == cudaSuccess) hf_err = cudaDeviceGetAttribute(&hf_sms, cudaDevAttrMultiProcessorCount, hf_device);")
        body.append("    if (hf_err != cudaSuccess) return hf_err;")
        body.append(f"    if (hf_blocks > (unsigned long long)hf_sms * {blocks_per_sm}ull) hf_blocks = (unsigned long long)hf_sms * {blocks_per_sm}ull;")
        body.append("  }")
    body.append("  if (hf_blocks > 0x7fffffffull) return cudaErrorInvalidConfiguration;")
    # Above 48 KiB of static + dynamic shared memory a launch needs the opt-in; the
    # parts' static arrays count too (the Python path, runtime/compile.py, does the same).
    body.append("  if (hf_smem > 0) {")
    body.append("    cudaFuncAttributes hf_attr;")
    body.append(f"    cudaError_t hf_err = cudaFuncGetAttributes(&hf_attr, {instance});")
    body.append("    if (hf_err != cudaSuccess) return hf_err;")
    body.append("    if (hf_smem + hf_attr.sharedSizeBytes > 48 * 1024) {")
    body.append(f"      hf_err = cudaFuncSetAttribute({instance}, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)hf_smem);")
    body.append("      if (hf_err != cudaSuccess) return hf_err;")
    body.append("    }")
    body.append("  }")
    args = [n for s in sigs for n in s.names]
    for s in sigs:
        grid = s.hidden_name("grid")
        args += [f"{grid}.x", f"{grid}.y", f"{grid}.z", s.hidden_name("smem")]
    if any(s.part.padding for s in sigs):
        body.append(f"  // {block_threads} threads: " + " + ".join(
            f"{s.part.threads} (+{s.part.padding} padding)" if s.part.padding else str(s.part.size) for s in sigs))
    body.append(f"  {instance}<<<(unsigned)hf_blocks, {block_threads}, hf_smem, stream>>>(")
    body.append("      " + ", ".join(args) + ");")
    body.append("  return cudaGetLastError();")
    joined = ",\n    ".join(params)
    return (
        "#ifndef __CUDACC_RTC__\n"
        f"{head}inline cudaError_t {kernel_name}_launch(\n    {joined}) {{\n" + "\n".join(body) + "\n}\n#endif\n"
    )
