"""Random, valid, deterministic CUDA kernels for differential testing of the fuser.

A ``KernelRecipe`` is a kernel as data: a block shape, a grid, and a list of steps, each
a small piece of CUDA that transforms the thread's running value ``v`` (barriers at top
level, in loops and in block-uniform branches, ``__syncthreads_count/and/or``, static
and dynamic shared memory, also through a wrapper struct, early exits of whole blocks,
helpers that read built-ins or synchronise, warp shuffles and votes, atomics on distinct
addresses; and the shapes that once gave wrong fused kernels: static shared arrays read
as vectors, register arrays in ``#pragma unroll`` loops, a specialised template family,
warp-level CUB through a namespace alias, a helper's static shared scratch array and a
file-scope ``__shared__`` array that two parts would share; cooperative groups' async copies
over the block, qualified or after a using-directive; the block's barrier and the thread's
index in inline PTX, which only a layout that keeps the block whole takes; one file's overload
set that another file's lacks a member of; a call through a variable that holds a function;
a class template one file specialises and another does not; block-reading types with a
constructor of their own and value-initialised; a class whose member alias shadows the
block-reading class template it names, made through a traits struct's alias, and a member
template specialised outside its class template's specialisations), optionally inside a grid-stride loop, a
template and a namespace. Every
thread ends by writing ``v`` to its own element of ``out``, so the result is
deterministic and compared bit for bit.

``generate(seed, count)`` draws a set of kernels; ``FuzzCase.render`` writes each one's
file; ``reduce_case`` shrinks a failing case (fewer kernels, fewer steps, plainer shapes)
while a predicate still fails. The runner (compile-only on the CPU, verify on a GPU) is
in ``hfuse.testing.fuzz_run``.
"""
from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import Callable, Sequence

from ..spec import Dim3

WARP = 32

# step kind -> needs (what the kernel must have for it to be valid)
STEP_KINDS = ("arith", "static_smem", "dynamic_smem", "wrapper_smem", "loop_barrier", "uniform_branch_barrier",
              "sync_count", "sync_and", "sync_or", "helper_builtin", "helper_barrier", "shuffle", "vote",
              "atomic", "block_exit", "vector_smem", "unroll_regs", "specialised", "cub_warp", "helper_scratch",
              "file_shared", "cg_async_copy", "ptx_barrier", "ptx_tid", "overload_set", "pointer_call",
              "class_family", "context_ctor", "lenient_member", "stats_class")
WARP_STEPS = {"shuffle", "vote", "cub_warp", "helper_scratch"}
"""Steps that need whole warps (the block a multiple of 32)."""
FLAT_STEPS = {"ptx_tid"}
"""Steps that need a 1-D block (they read the thread's index where hfuse cannot rewrite it)."""
WHOLE_BLOCK_STEPS = {"ptx_barrier", "ptx_tid"}
"""Steps that are correct only where a fused block runs one whole block of the kernel: the
runner fuses their cases in a layout that keeps the block whole."""
RARE_STEPS = WHOLE_BLOCK_STEPS | {"pointer_call"}
"""Steps drawn less often: most cases stay for every layout, and a call through a pointer is
refused wherever some helper of the case reads the block (a documented limit)."""


@dataclass(frozen=True)
class Step:
    kind: str
    constant: int
    """A per-step number (shift, multiplier, offset) so steps differ."""


@dataclass(frozen=True)
class KernelRecipe:
    """One generated kernel."""

    index: int
    block: Dim3
    grid: Dim3
    steps: tuple[Step, ...]
    grid_stride: bool = False
    template: bool = False
    namespace: bool = False

    @property
    def name(self) -> str:
        return f"fz{self.index}"

    @property
    def qualified(self) -> str:
        return f"fzns{self.index}::{self.name}" if self.namespace else self.name

    @property
    def template_args(self) -> tuple[str, ...]:
        return (str(3 + self.index),) if self.template else ()

    @property
    def file(self) -> str:
        return f"fuzz_{self.index}.cu"

    @property
    def threads(self) -> int:
        return self.block.size * self.grid.size

    @property
    def n(self) -> int:
        """Elements of ``in``/``out``: with a grid-stride loop, more than one per thread."""
        return self.threads * 2 + 7 if self.grid_stride else self.threads

    @property
    def dynamic_smem(self) -> int:
        return 4 * self.block.size if any(s.kind in ("dynamic_smem", "wrapper_smem") for s in self.steps) else 0

    @property
    def whole_block(self) -> bool:
        """It must run as one whole block of its own (``WHOLE_BLOCK_STEPS``)."""
        return any(s.kind in WHOLE_BLOCK_STEPS and self.renders(s) for s in self.steps)

    @property
    def features(self) -> set[str]:
        found = {s.kind for s in self.steps if self.renders(s)} | {f"block_{self.block.rank}d"}
        found |= {f for f, on in (("grid_stride", self.grid_stride), ("template", self.template),
                                  ("namespace", self.namespace)) if on}
        if self.block.size % WARP:
            found.add("partial_warp_block")
        return found

    def renders(self, step: Step) -> bool:
        """Whether ``step`` is in the kernel's text: a whole-block exit is left out of a
        grid-stride loop, where it would skip the later iterations' barriers."""
        return not (self.grid_stride and step.kind == "block_exit")

    def render(self) -> str:
        return _render(self)


@dataclass(frozen=True)
class FuzzCase:
    """A set of kernels to fuse together, and how."""

    seed: int
    kernels: tuple[KernelRecipe, ...]
    choice: int = 0
    """Picks the candidate (partition, register cap, layout) among those enumerated."""

    def sources(self) -> dict[str, str]:
        return {k.file: k.render() for k in self.kernels}

    @property
    def features(self) -> set[str]:
        return set().union(*(k.features for k in self.kernels)) | {f"{len(self.kernels)}_kernels"}

    def describe(self) -> str:
        parts = [f"{k.qualified}<{','.join(k.template_args)}> block {k.block} grid {k.grid} "
                 f"steps {[s.kind for s in k.steps]}" for k in self.kernels]
        return f"seed {self.seed} choice {self.choice}: " + "; ".join(parts)


# -- generation ------------------------------------------------------------------

_BLOCKS_1D = (32, 64, 96, 128, 192, 256, 384, 512, 120, 200)
_BLOCKS_ND = ((16, 8, 1), (32, 4, 1), (8, 8, 2), (8, 4, 4), (16, 4, 2), (12, 10, 1))


def _block(rng: random.Random) -> Dim3:
    if rng.random() < 0.6:
        return Dim3(rng.choice(_BLOCKS_1D))
    return Dim3(*rng.choice(_BLOCKS_ND))


def _grid(rng: random.Random) -> Dim3:
    return rng.choice((Dim3(rng.randint(1, 40)), Dim3(rng.randint(1, 9), rng.randint(1, 5)),
                       Dim3(rng.randint(1, 4), rng.randint(1, 3), rng.randint(1, 3))))


def random_kernel(rng: random.Random, index: int) -> KernelRecipe:
    block = _block(rng)
    kinds = [k for k in STEP_KINDS
             if not (k in WARP_STEPS and block.size % WARP) and not (k in FLAT_STEPS and block.rank > 1)]
    weights = [0.25 if k in RARE_STEPS else 1.0 for k in kinds]
    steps = tuple(Step(rng.choices(kinds, weights)[0], rng.randint(1, 31)) for _ in range(rng.randint(1, 6)))
    return KernelRecipe(index, block, _grid(rng), steps, grid_stride=rng.random() < 0.3,
                        template=rng.random() < 0.25, namespace=rng.random() < 0.25)


def generate(seed: int, *, kernels: tuple[int, int] = (2, 4)) -> FuzzCase:
    """One random case: 2-4 kernels (``kernels``: inclusive range) and a candidate choice."""
    rng = random.Random(seed)
    count = rng.randint(*kernels)
    made = tuple(random_kernel(rng, i) for i in range(count))
    while sum(-(-k.block.size // WARP) * WARP for k in made) > 1024:  # a fused block holds at most 1024 threads
        made = tuple(replace(k, block=Dim3(max(WARP, k.block.size // 2 // WARP * WARP))) for k in made)
    return FuzzCase(seed, made, choice=rng.randint(0, 1 << 16))


# -- rendering -------------------------------------------------------------------

def _step_code(step: Step, j: int, r: KernelRecipe, helpers: list[str]) -> list[str]:
    """CUDA statements for step ``j`` (in the kernel body, with ``v``, ``tid``, ``B`` in scope)."""
    c, k = step.constant, step.kind
    if k == "arith":
        return [f"v = v * {2 * c + 1}u + (v >> {c % 16 + 1});"]
    if k == "static_smem":
        return [f"{{ __shared__ unsigned st{j}[{r.block.size}];",
                f"  unsigned* s = st{j};",
                "  s[tid] = v; __syncthreads();",
                f"  v += s[(tid + {c}) % B]; __syncthreads(); }}"]
    if k == "dynamic_smem":
        return ["{ extern __shared__ unsigned dyn[];",
                "  dyn[tid] = v ^ 0x9e3779b9u; __syncthreads();",
                f"  v = v * 7u + dyn[(tid + B - {c % max(r.block.size, 1)}) % B]; __syncthreads(); }}"]
    if k == "wrapper_smem":
        helpers.append("struct FzShared { __device__ unsigned* get() { extern __shared__ unsigned fz_dyn[]; "
                       "return fz_dyn; } };")
        return ["{ unsigned* s = FzShared().get();",
                "  s[tid] = v + 1u; __syncthreads();",
                f"  v ^= s[(tid * {c | 1}) % B]; __syncthreads(); }}"]
    if k == "loop_barrier":
        return [f"{{ __shared__ unsigned lb{j}[{r.block.size}];",
                f"  for (int it = 0; it < {c % 4 + 1}; ++it) {{",
                f"    lb{j}[tid] = v; __syncthreads();",
                f"    v = v * 3u + lb{j}[(tid + it + 1) % B]; __syncthreads();",
                "  } }"]
    if k == "uniform_branch_barrier":
        return [f"if (bid % {c % 3 + 2} == 0) {{ __shared__ unsigned ub{j}[{r.block.size}];",
                f"  ub{j}[tid] = v; __syncthreads(); v += ub{j}[B - 1 - tid]; __syncthreads(); }}"]
    # the value barriers as real code writes them: the result in a local of its own
    if k == "sync_count":
        return [f"const int sc{j} = __syncthreads_count((v >> {c % 8}) & 1u);", f"v += (unsigned)sc{j};"]
    if k == "sync_and":
        return [f"int sa{j} = __syncthreads_and(v > {c}u);", f"v += (unsigned)sa{j};"]
    if k == "sync_or":
        return [f"const int so{j} = __syncthreads_or((v & {c}u) == 0u);", f"v ^= (unsigned)so{j} << 3;"]
    if k == "helper_builtin":
        helpers.append("__device__ unsigned fz_salt(unsigned v) {\n"
                       "  return v ^ (threadIdx.x * 2654435761u) ^ (threadIdx.y * 40503u) ^ (blockIdx.x << 7)"
                       " ^ (blockDim.x * 31u + blockDim.y + blockDim.z);\n}")
        return ["v = fz_salt(v);"]
    if k == "helper_barrier":
        helpers.append("__device__ unsigned fz_exchange(unsigned v, unsigned* s, int tid, int B) {\n"
                       "  s[tid] = v; __syncthreads();\n  unsigned w = s[(tid + 1) % B]; __syncthreads();\n"
                       "  return v + w;\n}")
        return [f"{{ __shared__ unsigned hx{j}[{r.block.size}]; v = fz_exchange(v, hx{j}, tid, B); }}"]
    if k == "shuffle":
        return [f"v += __shfl_xor_sync(0xffffffffu, v, {1 << (c % 5)});"]
    if k == "vote":
        return [f"v += (unsigned)__popc(__ballot_sync(0xffffffffu, (v >> {c % 8}) & 1u));"]
    if k == "atomic":
        return ["atomicAdd(&scratch[gtid], v);", "v ^= scratch[gtid];"] if not r.grid_stride else \
            ["atomicXor(&scratch[i % n_scratch], v & 0u);"]
    # the shapes that once gave wrong or unlaunchable fused kernels (each kernel alone is fine)
    if k == "vector_smem":  # a plain array read as uint4: 16-byte aligned only at offset 0
        pad = min(4 * c + 4, r.block.size)  # odd-sized neighbours shift whatever follows them
        return [f"{{ __shared__ unsigned char vp{j}[{4 * c + 4}];",
                f"  __shared__ unsigned vs{j}[{r.block.size}];",
                f"  if (tid < {pad}) vp{j}[tid] = (unsigned char)v;",
                f"  vs{j}[tid] = v; __syncthreads();",
                f"  const uint4 q = reinterpret_cast<const uint4*>(vs{j})[(tid / 4 + {c}) % (B / 4)];",
                f"  v += (q.x ^ q.y) + (q.z ^ q.w) + vp{j}[(tid + 1) % {pad}]; __syncthreads(); }}"]
    if k == "unroll_regs":  # a register array indexed in unrolled loops
        return ["{ unsigned ra[8];",
                "#pragma unroll",
                f"  for (int q = 0; q < 8; ++q) ra[q] = v * (unsigned)(q + {c}) + (unsigned)q;",
                "  #pragma unroll 4",
                f"  for (int q = 0; q < 8; ++q) v ^= ra[(q * 3 + {c}) % 8] >> q; }}"]
    if k == "specialised":  # the primary template compiles for unsigned too, and computes something else
        helpers.append("template <typename T>\n__device__ T fz_mix(T v) { return v; }\n"
                       "template <>\n__device__ unsigned fz_mix<unsigned>(unsigned v) { return v * 2654435761u + 7u; }")
        return ["v = fz_mix<unsigned>(v);"]
    if k == "cub_warp":  # warp-level CUB through a namespace alias (uses the lane id)
        helpers.append("#include <cub/warp/warp_reduce.cuh>\nnamespace fzcub = cub;")
        return ["{ using FzWarp = fzcub::WarpReduce<unsigned>;",
                f"  __shared__ typename FzWarp::TempStorage wr{j}[{max(r.block.size // WARP, 1)}];",
                f"  v += __shfl_sync(0xffffffffu, FzWarp(wr{j}[tid / 32]).Sum(v ^ {c}u), 0); }}"]
    if k == "helper_scratch":  # a helper's static shared array, warp-level use only: one per part
        helpers.append("__device__ unsigned fz_scratch_swap(unsigned v, int tid) {\n"
                       "  __shared__ unsigned fz_scratch[1024];\n  fz_scratch[tid] = v; __syncwarp();\n"
                       "  const unsigned w = fz_scratch[tid ^ 1]; __syncwarp();\n  return w;\n}")
        return [f"v += fz_scratch_swap(v, tid) * {c}u;"]
    if k == "file_shared":  # a file-scope __shared__ array: each file's kernel had its own
        helpers.append("__shared__ unsigned fz_stage[1024];")
        return [f"fz_stage[tid] = v; __syncthreads(); v ^= fz_stage[(tid + {c}) % B] << 1; __syncthreads();"]
    if k == "cg_async_copy":  # the block's slice of the input copied into shared memory by the whole block
        helpers.append("#include <cooperative_groups.h>\n#include <cooperative_groups/memcpy_async.h>\n"
                       "namespace fzcg = cooperative_groups;")
        # qualified through an alias, or by the names alone after a using-directive in the block
        cg, using = ("", ["  using namespace cooperative_groups;"]) if c % 2 else ("fzcg::", [])
        return ["{", *using,
                f"  __shared__ unsigned ac{j}[{r.block.size}];",
                f"  const auto fzb = {cg}this_thread_block();",
                "  const int start = i - tid;  // the block's first element",
                "  const int cnt = n - start < B ? (n - start > 0 ? n - start : 0) : B;",
                f"  {cg}memcpy_async(fzb, ac{j}, in + start, sizeof(unsigned) * cnt);",
                f"  {cg}wait(fzb);",
                f"  if (cnt > 0) v += ac{j}[(tid + {c}) % cnt];",
                "  fzb.sync(); }"]
    if k == "ptx_barrier":  # the block's barrier in inline PTX, as FlashAttention writes it
        return [f"{{ __shared__ unsigned pb{j}[{r.block.size}];",
                f"  pb{j}[tid] = v; asm volatile(\"bar.sync 0;\" ::: \"memory\");",
                f"  v ^= pb{j}[(tid + {c}) % B] * 3u; asm volatile(\"bar.sync 0;\" ::: \"memory\"); }}"]
    if k == "ptx_tid":  # the thread's index read in inline PTX (a 1-D block)
        return [f"{{ unsigned pt{j}; asm(\"mov.u32 %0, %%tid.x;\" : \"=r\"(pt{j})); v += pt{j} * {c}u; }}"]
    if k == "overload_set":  # every file has fz_nudge(unsigned); odd ones one more, which computes something else
        extra = ("\n__device__ unsigned fz_nudge(unsigned long long v) { return (unsigned)(v >> 3) ^ 0x5au; }"
                 if r.index % 2 else "")
        helpers.append(f"__device__ unsigned fz_nudge(unsigned v) {{ return v * 3u + 1u; }}{extra}")
        return [f"v = fz_nudge(v) + {c}u;  // the unsigned overload, as compiled alone"]
    if k == "pointer_call":  # a call through a file-scope variable that holds a function
        helpers.append("typedef unsigned (*fz_op_t)(unsigned);\n"
                       "__device__ unsigned fz_rotate(unsigned v) { return (v << 3) | (v >> 29); }\n"
                       "__device__ fz_op_t fz_op = fz_rotate;")
        return [f"v = fz_op(v) ^ {c}u;"]
    if k == "class_family":  # every file has FzScale<T>; odd ones a specialisation for unsigned, other values
        special = ("\ntemplate <> struct FzScale<unsigned> { static constexpr unsigned value = 5u; };"
                   if r.index % 2 else "")
        helpers.append(f"template <typename T> struct FzScale {{ static constexpr T value = T(3); }};{special}")
        return [f"v = v * FzScale<unsigned>::value + {c}u;  // its own file's family, as compiled alone"]
    if k == "context_ctor":  # types that read the block: one with its own constructor, one value-initialised
        helpers.append("struct FzLane {\n  unsigned base;\n  __device__ explicit FzLane(unsigned b) : base(b) {}\n"
                       "  __device__ unsigned lane() const { return (threadIdx.x & 31u) + base; }\n};\n"
                       "struct FzTally {\n  unsigned total, count;\n"
                       "  __device__ void add(unsigned x) { total += x * (1u + (threadIdx.x & 1u)); ++count; }\n};")
        return [f"{{ FzLane l{j}({c}u); FzTally t{j}{{}}; t{j}.add(v); t{j}.add(l{j}.lane()); "
                f"v += t{j}.total + t{j}.count; }}"]
    if k == "lenient_member":  # a member template called without 'template' (nvcc takes it; Clang reads it amended)
        helpers.append("#include <cuda/std/limits>\n"
                       "template <typename T> struct FzConv {\n  template <int N> __device__ static unsigned conv(unsigned v) "
                       "{ return v * N + (threadIdx.x & 1u); }\n};\n"
                       "template <typename T, int N> __device__ unsigned fz_conv(unsigned v) { return FzConv<T>::conv<N>(v); }")
        return [f"v = fz_conv<unsigned, {c % 4 + 1}>(v) ^ (unsigned)cuda::std::numeric_limits<unsigned char>::max();"]
    if k == "stats_class":  # flash-attn's layer norm: `using Reducer = Reducer<T>;` in a class, made via traits
        helpers.append("template <typename T> struct FzReducer {\n  T scale;\n"
                       "  __device__ explicit FzReducer(T s) : scale(s) {}\n"
                       "  __device__ T apply(T v) const { return v * scale + (T)(threadIdx.x & 3u); }\n};\n"
                       "template <int I> struct FzPick {\n  template <typename V> static __device__ V of(V a, V b);\n};\n"
                       "template <>\ntemplate <typename V>\n__device__ V FzPick<0>::of(V a, V b) { return a ^ b; }\n"
                       "template <>\ntemplate <typename V>\n__device__ V FzPick<1>::of(V a, V b) { return a + 2u * b; }\n"
                       "template <typename T> struct FzStats {\n  using FzReducer = FzReducer<T>;\n"
                       "  __device__ explicit FzStats(T s) : red_(s) {}\n"
                       "  __device__ T run(T v) const { return red_.apply(v); }\n  FzReducer red_;\n};\n"
                       "struct FzTraits {\n  using Stats = FzStats<unsigned>;\n};")
        return [f"{{ using FzS{j} = FzTraits::Stats; FzS{j} st{j}({c}u); "
                f"v = FzPick<{c % 2}>::of<unsigned>(st{j}.run(v), {c}u); }}"]
    if k == "block_exit":
        return [f"if (bid % {c % 4 + 2} == {c % 2}) {{ if (i < n) out[i] = v ^ 0xdeadu; return; }}"]
    raise ValueError(k)


def _render(r: KernelRecipe) -> str:
    helpers: list[str] = []
    body = [line for j, s in enumerate(r.steps) if r.renders(s) for line in _step_code(s, j, r, helpers)]
    indent = "    "
    head = ("template <int K>\n" if r.template else "")
    k_term = "(unsigned)K" if r.template else "5u"
    lines = [
        "// generated by hfuse.testing.fuzz",
        *dict.fromkeys(helpers),
        f"{'namespace fzns' + str(r.index) + ' {' if r.namespace else ''}",
        f"{head}__global__ void {r.name}(const unsigned* __restrict__ in, unsigned* __restrict__ out, "
        "unsigned* __restrict__ scratch, int n, int n_scratch) {",
        "  const int B = blockDim.x * blockDim.y * blockDim.z;",
        "  const int tid = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);",
        "  const int bid = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);",
        "  const int gtid = bid * B + tid;",
        "  const int total = B * gridDim.x * gridDim.y * gridDim.z;",
    ]
    if r.grid_stride:
        lines += ["  for (int base = 0; base < n; base += total) {  // uniform trip count: barriers stay legal",
                  "    const int i = base + gtid;",
                  f"    unsigned v = (i < n ? in[i] : 0u) + {k_term};"]
    else:
        indent = "  "
        lines += ["  const int i = gtid;", f"  unsigned v = (i < n ? in[i] : 0u) + {k_term};"]
    lines += [indent + line for line in body]
    lines += [f"{indent}if (i < n) out[i] = v;"] + (["  }"] if r.grid_stride else []) + ["}"]
    if r.namespace:
        lines.append("}  // namespace")
    return "\n".join(line for line in lines if line != "") + "\n"


# -- reduction -------------------------------------------------------------------

def reduce_case(case: FuzzCase, fails: Callable[[FuzzCase], bool], *, budget: int = 200) -> FuzzCase:
    """The smallest variant of ``case`` (greedy, one change at a time) for which ``fails``
    still holds: kernels dropped (down to two), steps dropped, grid-stride loops,
    templates and namespaces removed, grids shrunk to one block."""
    tries = 0

    def attempt(candidate: FuzzCase) -> bool:
        nonlocal tries
        tries += 1
        return tries <= budget and fails(candidate)

    changed = True
    while changed and tries < budget:
        changed = False
        for variant in _variants(case):
            if attempt(variant):
                case, changed = variant, True
                break
    return case


def _variants(case: FuzzCase) -> list[FuzzCase]:
    out = []
    kernels = case.kernels
    if len(kernels) > 2:
        out += [replace(case, kernels=_renumbered(kernels[:i] + kernels[i + 1:])) for i in range(len(kernels))]
    for i, k in enumerate(kernels):
        def swap(new: KernelRecipe, i: int = i) -> FuzzCase:
            return replace(case, kernels=kernels[:i] + (new,) + kernels[i + 1:])

        out += [swap(replace(k, steps=k.steps[:j] + k.steps[j + 1:])) for j in range(len(k.steps))]
        out += [swap(replace(k, **{flag: False})) for flag in ("grid_stride", "template", "namespace")
                if getattr(k, flag)]
        if k.grid.size > 1:
            out.append(swap(replace(k, grid=Dim3(1))))
    return out


def _renumbered(kernels: Sequence[KernelRecipe]) -> tuple[KernelRecipe, ...]:
    return tuple(replace(k, index=i) for i, k in enumerate(kernels))


__all__ = ["FuzzCase", "KernelRecipe", "Step", "STEP_KINDS", "generate", "random_kernel", "reduce_case"]
