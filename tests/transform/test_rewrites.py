"""Each rewrite on a small function, as a reader would check it by eye."""
from dataclasses import replace
from pathlib import Path

from hfuse.frontend.extract import model_source
from hfuse.frontend.resolve import Resolver
from hfuse.transform.barriers import barrier_edits
from hfuse.transform.builtins import builtin_edits
from hfuse.transform.calls import call_edits, signature_edits
from hfuse.transform.context import PartContext
from hfuse.transform.cooperative_groups import cooperative_groups_edits
from hfuse.transform.definition import Definition
from hfuse.transform.edits import apply_edits
from hfuse.transform.shared_memory import shared_memory_edits

# the program declares ``namespace cg = cooperative_groups;``, as the files these rewrites see do
PROGRAM = Resolver.of(model_source(Path("k.cu"), "namespace cg = cooperative_groups;\n").items)
CTX = PartContext(index=2, kernel="k", barrier_id=3, threads=128, specialised=frozenset({"helper"}),
                  extern_shared=(("file_scope", "int"),), resolver=PROGRAM)


def _apply(text: str, rewrite) -> str:
    """Every rewrite has one signature: a parsed definition and the part's context in, edits out."""
    definition = Definition(text, file=Path("k.cu"))
    return apply_edits(definition.data, rewrite(definition, CTX))


def test_builtins_read_the_context_but_fields_and_locals_do_not_change():
    out = _apply("__device__ int f(S s) { dim3 b = blockDim; return threadIdx.x + s.threadIdx + gridDim.y; }", builtin_edits)
    assert "dim3 b = hf_ctx.blockDim;" in out
    assert "hf_ctx.threadIdx.x + s.threadIdx + hf_ctx.gridDim.y" in out


def test_a_parameter_or_local_named_like_a_builtin_is_left_alone():
    # once: 'int flat(dim3 blockDim, ...)' became 'dim3 hf_ctx.blockDim' (nvcc failed)
    out = _apply("__device__ int flat(dim3 blockDim, uint3 threadIdx) { const dim3 gridDim(4, 1, 1); "
                 "return threadIdx.y * blockDim.x + gridDim.x + blockIdx.x; }", builtin_edits)
    assert "flat(dim3 blockDim, uint3 threadIdx) { const dim3 gridDim(4, 1, 1); " in out
    assert "return threadIdx.y * blockDim.x + gridDim.x + hf_ctx.blockIdx.x;" in out


def test_a_direct_initialisation_the_grammar_reads_as_a_function_declaration_hides_nothing():
    # 'T v(x[threadIdx.x]);' parses as a function v taking an x[threadIdx.x]: threadIdx there
    # (and in every later statement) was once taken for a declared name, and read the fused block
    out = _apply("__device__ void k(float* x) { __nv_fp8_e4m3 v(x[threadIdx.x]); x[threadIdx.x] = float(v); }",
                 builtin_edits)
    assert "v(x[hf_ctx.threadIdx.x]); x[hf_ctx.threadIdx.x] = float(v);" in out


def test_barriers_become_named_barriers_of_the_part():
    out = _apply("__device__ void f(int p) { __syncthreads(); int c = __syncthreads_count(p); __syncthreads_or(p); cg::sync(b); }", barrier_edits)
    assert "hfuse_sync<3, 128>();" in out
    assert "hfuse_sync_count<3, 128>(p)" in out and "hfuse_sync_or<3, 128>(p)" in out
    assert "hfuse_group_sync(b)" in out and "__syncthreads" not in out


def test_cooperative_group_block_becomes_the_parts_block():
    out = _apply(
        "__device__ void f() { cg::thread_block b = cg::this_thread_block(); auto w = cg::tiled_partition<32>(b); }",
        cooperative_groups_edits,
    )
    assert "hfuse_thread_block<3, 128> b = hfuse_thread_block<3, 128>(hf_ctx);" in out
    assert "cg::tiled_partition<32>(cooperative_groups::this_thread_block())" in out


def test_only_tiles_cut_from_the_block_count_from_the_parts_first_warp():
    # a half-warp's place is within its warp, fused or not: once offset like its warp's (wrong)
    definition = Definition("__device__ int f() { auto block = cg::this_thread_block();\n"
                            "  auto warp = cg::tiled_partition<32>(block); auto half = cg::tiled_partition<16>(warp);\n"
                            "  return warp.meta_group_rank() + half.meta_group_rank() * half.meta_group_size(); }",
                            file=Path("k.cu"))
    out = apply_edits(definition.data, cooperative_groups_edits(definition, replace(CTX, offset=128)))
    assert "(warp.meta_group_rank() - 4u) + half.meta_group_rank() * half.meta_group_size()" in out


def test_cooperative_groups_grid_becomes_the_parts_grid():
    # a grid-stride loop over this_grid() counts the part's own blocks and threads
    out = _apply(
        "__device__ void f(float* y, size_t n) { const auto grid = cg::this_grid(); cg::grid_group g = cg::this_grid();\n"
        "  for (size_t i = grid.thread_rank(); i < n; i += grid.size()) y[i] = cg::this_grid().block_rank(); }",
        cooperative_groups_edits,
    )
    assert "const auto grid = hfuse_grid_group(hf_ctx); hfuse_grid_group g = hfuse_grid_group(hf_ctx);" in out
    assert "i = grid.thread_rank(); i < n; i += grid.size()) y[i] = hfuse_grid_group(hf_ctx).block_rank();" in out


def test_dynamic_shared_memory_points_at_the_parts_slice():
    out = _apply("__device__ void f() { extern __shared__ float s[]; s[0] = file_scope[1]; }", shared_memory_edits)
    assert "float (&s)[] = *reinterpret_cast<float (*)[]>(hf_ctx.dyn_smem);" in out
    assert "(*reinterpret_cast<int (*)[]>(hf_ctx.dyn_smem))[1]" in out


def test_dynamic_shared_memory_stays_an_array_for_what_takes_its_address_or_storage():
    # once a pointer variable of the thread's: 'reinterpret_cast<const S&>(smem)' and '&smem'
    # then named the pointer, not the shared memory (as Mamba's scans and TMA code write them)
    out = _apply("__device__ void f() { extern __shared__ char smem[]; extern __shared__ float *rows[], grid[][8];\n"
                 "  const S& st = reinterpret_cast<const S&>(smem); unsigned a = __cvta_generic_to_shared(&smem); }",
                 shared_memory_edits)
    assert "char (&smem)[] = *reinterpret_cast<char (*)[]>(hf_ctx.dyn_smem);" in out
    assert "float *(&rows)[] = *reinterpret_cast<float *(*)[]>(hf_ctx.dyn_smem);" in out
    assert "float (&grid)[][8] = *reinterpret_cast<float (*)[][8]>(hf_ctx.dyn_smem);" in out
    assert "reinterpret_cast<const S&>(smem); unsigned a = __cvta_generic_to_shared(&smem);" in out


def test_calls_to_specialised_helpers_go_to_the_parts_copy():
    out = _apply("__device__ void f() { helper(); helper<int>(1, 2); other(3); }", call_edits)
    assert "helper__hf2(hf_ctx);" in out and "helper__hf2<int>(hf_ctx, 1, 2);" in out and "other(3);" in out
    out = _apply("__device__ int helper(int a) { return a; }", signature_edits)
    assert out == "__device__ int helper__hf2(const hfuse_ctx& hf_ctx, int a) { return a; }"


def test_a_lambda_that_reads_the_block_captures_the_context():
    from hfuse.transform.lambda_capture import lambda_capture_edits

    out = _apply("__device__ void f(float* x, int n) {\n"
                 "  auto a = []() { return threadIdx.x; };\n"          # a built-in: the context
                 "  auto b = [x, &n](int k) { return helper(x[k]); };\n"  # a helper copied per part
                 "  auto c = [&]() { return blockIdx.x; };\n"         # a default capture has it
                 "  auto d = [](float v) { return v * 2.f; };\n"      # reads nothing of the block
                 "  extern __shared__ float dyn[];\n"
                 "  auto e = [](int t) { dyn[t] = file_scope[t]; };\n"  # the part's slices
                 "}", lambda_capture_edits)
    assert "auto a = [&hf_ctx]() {" in out and "auto b = [x, &n, &hf_ctx](int k)" in out
    assert "auto c = [&]()" in out and "auto d = [](float v)" in out
    assert "auto e = [&hf_ctx, &dyn](int t)" in out  # (the array, by reference)


def test_a_lambda_in_a_kernel_template_captures_the_context_too():
    # once only a plain function's lambdas did: 'template <int M> __global__ void k' with
    # 'auto idx = [] () { return threadIdx.x; };' became a part nvcc refused (hf_ctx not captured)
    from hfuse.transform.lambda_capture import lambda_capture_edits

    out = _apply("template <int M>\n__device__ void f() { auto idx = [] () { return threadIdx.x; }; }",
                 lambda_capture_edits)
    assert "auto idx = [&hf_ctx] () {" in out
    out = _apply("template <class T> struct S { __device__ int g() { return [] { return threadIdx.x; }(); } };",
                 lambda_capture_edits)
    assert "[] {" in out  # a type's members reach the context through the type (context_types.py)


def test_a_lambdas_execution_space_in_device_code_becomes_a_comment():
    # NVRTC has no --extended-lambda; inside device code the annotation says nothing
    from hfuse.transform.lambda_spaces import lambda_space_edits, without_lambda_spaces

    text = ("__device__ int f(int x) { auto a = [] __device__ (int v) { return v; }; "
            "auto b = [=] __host__ __device__ () mutable { return x; }; auto c = [] { return 1; }; return a(x) + b() + c(); }")
    out = _apply(text, lambda_space_edits)
    assert "[] /*__device__*/ (int v)" in out and "[=] /*__host__*/ /*__device__*/ () mutable" in out
    assert "auto c = [] { return 1; }" in out and out.startswith("__device__ int f(int x)")  # the function's own stays
    assert without_lambda_spaces(text) == out
