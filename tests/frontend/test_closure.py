"""The device side of a program: only what the chosen kernels use reaches the fused file."""
from pathlib import Path

from hfuse.frontend.closure import device_closure
from hfuse.frontend.extract import model_source
from hfuse.frontend.program import Program

SAMPLE = """#include <stdio.h>
#include <cuda_fp16.h>
#define N 1024
struct Point3 { float x, y, z; };
struct HostOnly { int fd; };
typedef float real;
__constant__ real c_filter[9];
__device__ int d_counter;
static int h_counter = 0;
const int TILE = 16;
__device__ __forceinline__ float3 operator+(float3 a, float3 b) { return make_float3(a.x + b.x, a.y + b.y, a.z + b.z); }
__device__ real weight(int i) { return c_filter[i % 9]; }
__device__ real unused(real v) { return v; }
__host__ __device__ float both(float v) { return v * TILE; }
__global__ void blur(const Point3* in, real* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) { out[i] = in[i].x * weight(i) + both(1.f); atomicAdd(&d_counter, 1); }
}
__global__ void other_kernel(int* p) { p[0] = 1; }
void helper_init(HostOnly* h) { h_counter++; }
int main() { printf("%d\\n", N); return 0; }
"""


def _closure():
    program = Program.merge([model_source(Path("sample.cu"), SAMPLE)])
    kernel = program.kernel("blur", Path("sample.cu"))
    return device_closure(program, [kernel])


def test_closure_keeps_what_the_kernel_uses():
    kept = {n for item in _closure().items for n in item.names}
    assert {"Point3", "real", "c_filter", "d_counter", "TILE", "weight", "both"} <= kept


def test_closure_drops_host_code_and_unused_definitions():
    closure = _closure()
    kept = {n for item in closure.items for n in item.names}
    assert not kept & {"HostOnly", "h_counter", "unused", "helper_init", "main", "other_kernel", "blur"}
    assert set(closure.dropped_host) == {"helper_init", "main"}
    assert closure.dropped_unused >= 1  # 'unused'


def test_free_operators_are_kept_although_never_named():
    assert any(item.function is not None and item.function.name == "operator+" for item in _closure().items)


TRAITS = """
namespace detail {
template <typename T> struct Pack;
template <> struct Pack<float> { static constexpr int width = 2; };
template <typename T> struct Tag { using type = T; };
}  // namespace detail
struct Loose { int n; };
__global__ void k(float* p) {
  static_assert(4 % detail::Pack<float>::width == 0, "whole packs");
  p[0] = sizeof(typename detail::Tag<Loose>::type);
}
"""


def test_a_qualified_class_template_read_through_a_member_is_kept_with_its_arguments():
    # once: 'detail::Pack<float>::width' kept neither detail::Pack nor its specialisation,
    # and the fused file did not compile; the arguments of a middle component (Loose) neither
    program = Program.merge([model_source(Path("traits.cu"), TRAITS)])
    kept = [item.text for item in device_closure(program, [program.kernel("k", Path("traits.cu"))]).items]
    assert any("struct Pack<float>" in text for text in kept) and any("struct Pack;" in text for text in kept)
    assert any("struct Tag" in text for text in kept) and any("struct Loose" in text for text in kept)


USING = """namespace lib {
namespace detail {
enum class Mode { kKeep, kZero };
enum class Unused { kA };
}  // namespace detail
using detail::Mode;
using detail::Unused;
__global__ void k(float* x, Mode m) { x[threadIdx.x] = m == Mode::kZero ? 0.f : x[threadIdx.x]; }
}  // namespace lib
"""


def test_a_using_declaration_into_the_users_namespace_travels_with_what_it_brings():
    # FlashInfer's cascade.cuh: `using cp_async::PrefetchMode;` kept without its enum (a
    # kernel that does not use it): the fused file did not compile
    program = Program.merge([model_source(Path("using.cu"), USING)])
    texts = [item.text.strip() for item in device_closure(program, [program.kernel("lib::k", Path("using.cu"))]).items]
    assert "using detail::Mode;" in texts and "using detail::Unused;" not in texts
    assert any(t.startswith("enum class Mode") for t in texts) and not any(t.startswith("enum class Unused") for t in texts)


def test_a_using_declaration_whose_name_is_written_stays_with_the_overload_it_brings():
    # f(float) comes through `using detail::f;` beside lib's own f(int): dropping the declaration
    # would make the call f(int), silently; keeping it without detail::f does not compile (the
    # closure resolved `f` to lib's own alone): both travel, the overload set as written
    text = ("namespace lib {\nnamespace detail {\n__device__ float f(float v) { return v * 0.5f; }\n}\n"
            "using detail::f;\n__device__ int f(int v) { return v + 1; }\n"
            "__global__ void k(float* x) { x[threadIdx.x] = f(x[threadIdx.x]); }\n}\n")
    program = Program.merge([model_source(Path("overloads.cu"), text)])
    texts = [item.text.strip() for item in device_closure(program, [program.kernel("lib::k", Path("overloads.cu"))]).items]
    assert "using detail::f;" in texts
    assert "__device__ float f(float v) { return v * 0.5f; }" in texts and "__device__ int f(int v) { return v + 1; }" in texts
