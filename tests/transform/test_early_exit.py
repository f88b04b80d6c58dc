"""EarlyExitRewrite on single functions: the shapes made safe (checked on the rewritten
text: the flag guards the work, barriers and the loops around them still run in every
thread) and the shapes refused (with the return's and the offending line)."""
import re
import shutil
import subprocess

import pytest

from hfuse.errors import HFuseError
from hfuse.transform.early_exit import FLAG, Helpers, make_early_exits_safe

VOTE = "if (__any_sync(0xffffffffu, hf_active) && !hf_active) return;"


def _safe(text: str, helpers=frozenset(), exits: bool = False) -> str:
    return make_early_exits_safe(text, helpers if isinstance(helpers, Helpers) else set(helpers), "k.cu", 0, "k",
                                 exits=exits)


def _kernel(body: str, params: str = "float* a, int n") -> str:
    return f"__global__ void k({params}) {{\n{body}\n}}\n"


def _refused(text: str, helpers=frozenset(), exits: bool = False) -> HFuseError:
    with pytest.raises(HFuseError) as err:
        _safe(text, helpers, exits)
    assert err.value.where.kernel == "k" and err.value.where.line is not None
    return err.value


def _squash(text: str) -> str:
    return " ".join(text.split())


def test_no_barrier_means_no_change():
    text = "__global__ void k(int* a, int n) { int i = threadIdx.x; if (i >= n) return; a[i] = 1; }"
    assert _safe(text) == text


def test_a_return_that_is_the_last_statement_is_no_early_exit():
    # every thread runs it, whatever its value calls: once the helper became a region ending
    # in 'return {};', which a type without a default constructor (a block-reading type with
    # a constructor of its own, returned by a factory) refused
    for text in ("__device__ Reducer make(float* s) { return Reducer(s); }",
                 "__device__ float total(float* s, float v) { float w = v * 2.f; return block_sum(s, w); }"):
        assert _safe(text, {"Reducer", "block_sum"}) == text


def test_return_after_the_last_barrier_is_left_alone():
    text = "__global__ void k(int* a, int n) { __syncthreads(); if (threadIdx.x >= n) return; a[0] = 1; }"
    assert _safe(text) == text


def test_guard_before_barrier_becomes_a_flag_and_every_thread_reaches_the_barrier():
    text = (
        "__global__ void k(float* a, int n) {\n"
        "  __shared__ float s[256];\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  float v = a[i];\n"
        "  s[threadIdx.x] = v;\n"
        "  __syncthreads();\n"
        "  a[i] = s[threadIdx.x ^ 1] + v;\n"
        "}\n"
    )
    out = _safe(text)
    assert "return" not in out
    assert "if (hf_active && (i >= n)) hf_active = false;" in out
    assert "float v;" in out and "v = a[i];" in out  # hoisted: used after the barrier
    before, after = out.split("__syncthreads();")
    assert before.count("if (hf_active) {") == 1 and after.count("if (hf_active) {") == 1
    assert "__syncthreads();" not in after.split("if (hf_active) {")[1]


def test_a_local_of_constant_value_used_after_the_barrier_is_declared_above_the_guard_whole():
    # exllamav2's GEMM: 'float block_c[m_count][4] = {};' between the return and the loops that
    # use it, where a comment ends the guarded chunk; an array "could not be hoisted"
    text = (
        "__global__ void k(float* a, int n) {\n"
        "  __shared__ float s[128];\n"
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  s[threadIdx.x] = a[i];\n"
        "  __syncthreads();\n"
        "  float acc[2][4] = {};\n"
        "  float bias[2] = {-1.f, 0.5f};\n"
        "  // accumulate\n"
        "  int k = 0;\n"
        "  for (; k < 4; ++k) acc[k % 2][k] += s[(threadIdx.x + k) % 128] + bias[k % 2];\n"
        "  a[i] = acc[0][0] + acc[1][3];\n"
        "}\n"
    )
    out = _safe(text)
    assert "float acc[2][4] = {};" in out and "float bias[2] = {-1.f, 0.5f};" in out
    after = out.split("hfuse_sync" if "hfuse_sync" in out else "__syncthreads();")[1]
    assert after.index("float acc[2][4] = {};") < after.index("if (hf_active) {")
    assert "if (hf_active) {\n  }" not in out and "if (hf_active) {}" not in out  # (no empty guard left)


def test_block_uniform_guard_stays_a_plain_return():
    """Every thread of the part leaves together: nobody waits at the barrier."""
    text = _kernel("  if (blockIdx.x >= n) return;\n  a[threadIdx.x] = 1;\n  __syncthreads();\n  a[0] = 2;")
    assert _safe(text) == text


# --------------------------------------------------------------------------- loops around barriers
REDUCTION = _kernel(
    "  __shared__ float s[256];\n"
    "  const int t = threadIdx.x;\n"
    "  const int i = blockIdx.x * blockDim.x + t;\n"
    "  if (i >= n) return;\n"
    "  s[t] = a[i];\n"
    "  __syncthreads();\n"
    "  for (int stride = 1; stride < blockDim.x; stride *= 2) {\n"
    "    if (t % (2 * stride) == 0) s[t] += s[t + stride];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  if (t == 0) a[blockIdx.x] = s[0];"
)


def test_return_before_a_barrier_inside_a_loop_is_made_safe():
    out = _squash(_safe(REDUCTION))
    assert "return" not in out
    # the loop (with its barrier) still runs in every thread; only its work is guarded
    loop = re.search(r"for \(int stride = 1; stride < blockDim.x; stride \*= 2\) \{(.*?)__syncthreads\(\); \}", out)
    assert loop, out
    assert loop.group(1).strip() == "if (hf_active) { if (t % (2 * stride) == 0) s[t] += s[t + stride]; }"
    assert out.index("if (hf_active && (i >= n)) hf_active = false;") < out.index("for (int stride")
    assert "if (hf_active) { if (t == 0) a[blockIdx.x] = s[0]; }" in out


def test_horizontal_body_lets_threads_exit_while_their_warp_keeps_an_active_one():
    """A return from a horizontal part's body ends the thread: the threads that left exit
    unless their whole warp left, so full-mask warp operations see them exited, as natively."""
    out = _safe(REDUCTION, exits=True)
    assert out.count(VOTE) == 1
    flag = out.index("if (hf_active && (i >= n)) hf_active = false;")
    assert flag < out.index(VOTE) < out.index("__syncthreads();")
    assert "for (int stride = 1; stride < blockDim.x; stride *= 2) {" in out


def test_loop_bound_computed_after_the_return_from_uniform_values_is_fine():
    text = _kernel(
        "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  const int half = blockDim.x / 2;\n"
        "  int rounds = 0;\n"
        "  for (int s = half; s > 0; s >>= 1) rounds++;\n"
        "  for (int r = 0; r < rounds; ++r) {\n"
        "    a[i] += r;\n"
        "    __syncthreads();\n"
        "  }\n"
        "  do { __syncthreads(); } while (--rounds > n);"
    )
    with pytest.raises(HFuseError, match="rounds"):  # 'rounds' is counted in guarded work
        _safe(text)
    fixed = text.replace("  for (int s = half; s > 0; s >>= 1) rounds++;\n",
                         "  for (int s = half; s > 0; s >>= 1) { rounds++; __syncthreads(); }\n")
    out = _squash(_safe(fixed))
    assert "const int half = blockDim.x / 2;" in out  # a pure declaration runs in every thread
    assert "for (int r = 0; r < rounds; ++r) { if (hf_active) { a[i] += r; } __syncthreads(); }" in out
    assert "do { __syncthreads(); } while (--rounds > n);" in out


def test_guard_inside_a_uniform_loop_and_uniform_if_around_a_barrier():
    text = _kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  for (int k = 0; k < 4; ++k) {\n"
        "    if (i + k >= n) return;\n"
        "    a[i + k] = 0;\n"
        "  }\n"
        "  if (blockDim.x > 64) {\n"
        "    a[i] += 1;\n"
        "    __syncthreads();\n"
        "  } else {\n"
        "    __syncthreads();\n"
        "  }"
    )
    out = _squash(_safe(text))
    assert "for (int k = 0; k < 4; ++k) { if (hf_active && (i + k >= n)) hf_active = false; if (hf_active) { a[i + k] = 0; } }" in out
    assert "if (blockDim.x > 64) { if (hf_active) { a[i] += 1; } __syncthreads(); } else { __syncthreads(); }" in out


def test_syncthreads_count_and_or_count_only_the_threads_that_stay():
    text = _kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  int more = a[i] > 0;\n"
        "  while (__syncthreads_or(more)) { more = a[i]-- > 1; }\n"
        "  const int c = __syncthreads_count(a[i] > 3);\n"
        "  const int all = __syncthreads_and(a[i] > 0);\n"
        "  for (int r = 0; r < c; ++r) __syncthreads();\n"
        "  a[i] = c + all;"
    )
    out = _squash(_safe(text))
    assert "while (__syncthreads_or(hf_active && (more))) { if (hf_active) { more = a[i]-- > 1; } }" in out
    assert "const int c = __syncthreads_count(hf_active && (a[i] > 3));" in out
    assert "const int all = __syncthreads_and(!hf_active || (a[i] > 0));" in out
    assert "for (int r = 0; r < c; ++r) { __syncthreads(); }" in out  # the count is block-uniform


@pytest.mark.parametrize(
    "body, loop_line, words",
    [
        # the loop's bound depends on the thread index
        ("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n"
         "  for (int k = threadIdx.x; k < n; k += blockDim.x) { a[k] = 0; __syncthreads(); }", 4, ("threadIdx",)),
        # ... on data loaded after the guard
        ("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  int m = (int)a[blockIdx.x];\n"
         "  for (int k = 0; k < m; ++k) { a[i] += 1; __syncthreads(); }", 5, ("'m'", "memory")),
        # ... on a value only the active threads compute
        ("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  int m = 4;\n  if (a[i] > 0) m = 8;\n"
         "  while (m > 0) { m--; __syncthreads(); }", 6, ("'m'",)),
        # a break only some threads take changes the trip count
        ("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n"
         "  for (int k = 0; k < 8; ++k) { if (a[i] > k) break; __syncthreads(); }", 4, ("if",)),
        # a local passed to an unknown function may change
        ("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  int m = 4;\n  bump(m);\n"
         "  for (int k = 0; k < m; ++k) __syncthreads();", 6, ("'m'", "bump")),
        # an 'if' around a barrier with a thread-dependent condition
        ("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n"
         "  if (threadIdx.x < 32) { __syncthreads(); }", 4, ("'if'", "threadIdx")),
    ],
)
def test_loops_and_ifs_whose_control_may_differ_between_threads_are_refused(body, loop_line, words):
    err = _refused(_kernel(body))
    text = str(err)
    assert "early return at line 3" in text and err.where.line == loop_line, text
    for word in words:
        assert word in text, text
    assert err.hint


@pytest.mark.parametrize(
    "body, why",
    [
        ("if (threadIdx.x >= n) return;\nauto v = a[0];\n__syncthreads();\na[1] = v;", "cannot be hoisted"),
        ("if (threadIdx.x >= n) return;\nswitch (n) { case 1: __syncthreads(); }", "construct"),
        ("if (threadIdx.x >= n) return;\nif (a[0] > 0) { a[1] = 0; __syncthreads(); return; }\n__syncthreads();",
         "same branch"),
        ("int i = threadIdx.x;\nif (i >= n) return;\nagain: a[i] = 0;\n__syncthreads();\nif (a[0] > 1) goto again;", "goto"),
    ],
)
def test_unsafe_shapes_are_refused_with_the_line(body, why):
    err = _refused(_kernel(body))
    assert why in str(err)


def test_vertical_body_with_a_warp_operation_after_the_return_is_refused():
    """In vertical fusion the threads that returned stay alive: a full-mask shuffle would wait for them."""
    text = _kernel(
        "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n  float v = a[i];\n"
        "  v += __shfl_xor_sync(0xffffffffu, v, 1);\n  __syncthreads();\n  a[i] = v;"
    )
    err = _refused(text, exits=False)
    assert "__shfl_xor_sync" in str(err) and "vertical" in str(err)
    assert _safe(text, exits=True).count(VOTE) == 1  # horizontal: they exit instead


# --------------------------------------------------------------------------- helpers that synchronise
EXCHANGE = (
    "__device__ int exchange(int* buf, int v) {\n"
    "  buf[threadIdx.x] = v;\n"
    "  __syncthreads();\n"
    "  for (int s = 1; s < blockDim.x; s *= 2) {\n"
    "    buf[threadIdx.x] += buf[threadIdx.x ^ s];\n"
    "    __syncthreads();\n"
    "  }\n"
    "  return buf[threadIdx.x ^ 1];\n"
    "}\n"
)


def _helpers(**texts: str) -> Helpers:
    return Helpers(frozenset(texts), {name: (text,) for name, text in texts.items()})


def test_call_of_a_synchronising_helper_after_a_return_passes_the_activity_flag():
    kernel = _kernel(
        "  __shared__ int buf[256];\n"
        "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  int v = in[i];\n"
        "  out[i] = exchange(buf, v);\n"
        "  const int w = exchange(buf, 2 * v);\n"
        "  out[i] += w;",
        "const int* in, int* out, int n",
    )
    helpers = _helpers(exchange=EXCHANGE, k=kernel)
    out = _squash(_safe(kernel, helpers))
    # every thread calls the helper (it synchronises), the store of its result is guarded
    assert "{ auto hf_ret = exchange(buf, v, hf_active); if (hf_active) out[i] = hf_ret; }" in out
    assert "const int w = exchange(buf, 2 * v, hf_active);" in out
    assert "int v; if (hf_active) { v = in[i]; }" in out
    # the helper's copy takes the flag and guards its own work; its loop and barriers run for all
    helper = _squash(_safe(EXCHANGE, helpers))
    assert helper.startswith("__device__ int exchange(int* buf, int v, bool hf_caller_active = true) {")
    assert "bool hf_active = hf_caller_active;" in helper
    assert "if (hf_active) { buf[threadIdx.x] = v; } __syncthreads();" in helper
    assert ("for (int s = 1; s < blockDim.x; s *= 2) { if (hf_active) { buf[threadIdx.x] += buf[threadIdx.x ^ s]; } "
            "__syncthreads(); }") in helper
    assert "if (hf_active) return buf[threadIdx.x ^ 1]; return {};" in helper  # no read for a thread that returned


def test_helper_not_called_after_a_return_is_unchanged():
    kernel = _kernel("  __shared__ int buf[256];\n  out[threadIdx.x] = exchange(buf, n);", "int* out, int n")
    helpers = _helpers(exchange=EXCHANGE, k=kernel)
    assert _safe(EXCHANGE, helpers) == EXCHANGE


def test_helpers_take_the_flag_recursively():
    outer = ("__device__ int twice(int* buf, int v) {\n  int a = exchange(buf, v);\n  __syncthreads();\n"
             "  return exchange(buf, a);\n}\n")
    kernel = _kernel("  __shared__ int buf[256];\n  if (threadIdx.x >= n) return;\n  out[threadIdx.x] = twice(buf, n);",
                     "int* out, int n")
    helpers = _helpers(exchange=EXCHANGE, twice=outer, k=kernel)
    out = _squash(_safe(outer, helpers))
    assert "int a = exchange(buf, v, hf_active);" in out and "return exchange(buf, a, hf_active);" in out
    assert "bool hf_caller_active = true" in _safe(EXCHANGE, helpers)


ROWS = "__device__ void rows(int* buf, int m) {\n  for (int r = 0; r < m; ++r) { buf[r] = 0; __syncthreads(); }\n}\n"


def test_a_helpers_parameter_every_caller_passes_a_uniform_value_bounds_a_loop_around_a_barrier():
    # (call_sites.py) the kernel passes its own parameter n: every thread gives rows the same m
    kernel = _kernel("  __shared__ int buf[256];\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i >= n) return;\n  rows(buf, n);", "const int* in, int* out, int n")
    helpers = _helpers(rows=ROWS, k=kernel)
    assert "rows(buf, n, hf_active);" in _squash(_safe(kernel, helpers))
    assert "for (int r = 0; r < m; ++r) { if (hf_active) { buf[r] = 0; } __syncthreads(); }" in \
        _squash(_safe(ROWS, helpers))


@pytest.mark.parametrize(
    "call, helper, words",
    [
        # the threads that returned would evaluate the argument: out-of-range read
        ("out[i] = exchange(buf, in[i]);", EXCHANGE, ("in[i]", "reads memory")),
        # a loop inside the helper bounded by its parameter, to which a caller passes a per-thread value
        ("rows(buf, n - threadIdx.x % 2);", ROWS, ("'m'", "parameter")),
        # relies on a default argument: the flag would land in its place
        ("out[i] = dflt(buf);", "__device__ int dflt(int* buf, int v = 3) { __syncthreads(); return buf[v]; }\n",
         ("every parameter",)),
        # the barrier inside an expression that reads memory beside it
        ("out[i] = exchange(buf, 1) + in[i];", EXCHANGE, ("construct",)),
    ],
)
def test_unsafe_helper_calls_are_refused(call, helper, words):
    name = re.match(r"__device__ \w+ (\w+)\(", helper).group(1)
    kernel = _kernel(f"  __shared__ int buf[256];\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     f"  if (i >= n) return;\n  {call}", "const int* in, int* out, int n")
    err = _refused(kernel, _helpers(**{name: helper, "k": kernel}))
    text = str(err)
    assert "early return at line 4" in text and err.where.line == 5, text
    for word in words:
        assert word in text, text


def test_without_the_helpers_definition_the_call_is_refused():
    kernel = _kernel("  if (threadIdx.x >= n) return;\n  sync_all();\n  a[0] = 1;")
    assert "definition" in str(_refused(kernel, {"sync_all"}))


# --------------------------------------------------------------------------- the rewritten text compiles
@pytest.mark.nvcc
def test_rewritten_functions_compile(tmp_path):
    if shutil.which("nvcc") is None:
        pytest.skip("nvcc is not on PATH")
    kernel = _kernel(
        "  __shared__ int buf[256];\n"
        "  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  const int v = in[i];\n"
        "  out[i] = exchange(buf, v);\n"
        "  for (int s = blockDim.x / 2; s > 0; s >>= 1) {\n"
        "    if (threadIdx.x < s) buf[threadIdx.x] += buf[threadIdx.x + s];\n"
        "    __syncthreads();\n"
        "  }\n"
        "  const int c = __syncthreads_count(v > 0);\n"
        "  if (threadIdx.x == 0) out[n + blockIdx.x] = buf[0] + c;",
        "const int* in, int* out, int n",
    ).replace("__global__", 'extern "C" __global__')
    helpers = _helpers(exchange=EXCHANGE, k=kernel)
    source = _safe(EXCHANGE, helpers) + "\n" + _safe(kernel, helpers, exits=True)
    assert FLAG in source and "hf_caller_active" in source
    path = tmp_path / "rewritten.cu"
    path.write_text(source)
    result = subprocess.run(["nvcc", "-arch=sm_90", "-std=c++17", "-cubin", "-o", str(tmp_path / "r.cubin"), str(path)],
                            capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, source + result.stderr


def test_value_barriers_under_a_cast_are_rewritten_in_place():
    """Found by the fuzzer: ``v += (unsigned)__syncthreads_count(p);`` was refused."""
    text = _kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  unsigned v = i;\n"
        "  v += (unsigned)__syncthreads_count(v & 1u);\n"
        "  v ^= ((unsigned)__syncthreads_or(v == 0u));\n"
        "  a[i] += (float)__syncthreads_and(v > 2u);\n"
        "  a[i] = v;",
        params="float* a, int n",
    )
    out = _squash(_safe(text))
    assert "v += (unsigned)__syncthreads_count(hf_active && (v & 1u));" in out
    assert "v ^= ((unsigned)__syncthreads_or(hf_active && (v == 0u)));" in out
    # a store to memory keeps the cast and happens only while the thread is active
    assert "auto hf_ret = (float)__syncthreads_and(!hf_active || (v > 2u)); if (hf_active) a[i] += hf_ret;" in out


def test_value_barrier_inside_arithmetic_is_rewritten_in_place():
    """Found by the fuzzer: ``v ^= (unsigned)__syncthreads_or(p) << 3;`` was refused."""
    text = _kernel(
        "  int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
        "  if (i >= n) return;\n"
        "  unsigned v = i;\n"
        "  v ^= (unsigned)__syncthreads_or(v == 0u) << 3;\n"
        "  const int twice = 2 * __syncthreads_count(v & 1u) + 1;\n"
        "  a[i] = v + twice;",
    )
    out = _squash(_safe(text))
    assert "v ^= (unsigned)__syncthreads_or(hf_active && (v == 0u)) << 3;" in out
    assert "const int twice = 2 * __syncthreads_count(hf_active && (v & 1u)) + 1;" in out


@pytest.mark.parametrize("statement", [
    "  a[i] = a[i + 1] + __syncthreads_count(i & 1);",           # reads memory beside the barrier
    "  int c = (i > 3) && __syncthreads_or(i & 1);",            # the barrier skipped by some threads
    "  int c = i > 3 ? __syncthreads_count(1) : 0;",
    "  int c = __syncthreads_count(i & 1) + __syncthreads_or(i);",  # two barriers in one expression
])
def test_value_barrier_in_an_expression_it_cannot_prove_safe_is_refused(statement):
    text = _kernel("  int i = blockIdx.x * blockDim.x + threadIdx.x;\n  if (i >= n) return;\n" + statement +
                   "\n  a[i] = 1;")
    err = _refused(text)
    assert "early return at line 3" in str(err)


def test_helper_barrier_inside_arithmetic_stores_only_while_active():
    kernel = _kernel("  __shared__ int buf[256];\n  const int i = blockIdx.x * blockDim.x + threadIdx.x;\n"
                     "  if (i >= n) return;\n  out[i] = exchange(buf, 1) + 1;", "const int* in, int* out, int n")
    out = _squash(_safe(kernel, _helpers(exchange=EXCHANGE, k=kernel)))
    assert "{ auto hf_ret = exchange(buf, 1, hf_active) + 1; if (hf_active) out[i] = hf_ret; }" in out


@pytest.mark.parametrize("barrier", [
    "sync();",                               # a local lambda that synchronises
    "run(sync);",                            # ... given to a helper, which may run it
    "run([&] { __syncthreads(); });",
    "op();",                                 # a functor whose operator() synchronises
    "run(Sync{});",
    "Sync()();",
])
def test_a_barrier_behind_a_lambda_or_a_functor_counts(barrier):
    # once: such a barrier after 'if (i >= n) return;' was not seen, the return stayed, and the
    # returned threads' warps never reached the part's named barrier (a hang)
    text = _kernel("auto sync = [&]() { __syncthreads(); };\nSync op;\nint i = threadIdx.x;\n"
                   f"if (i >= n) return;\na[i] = 1;\n{barrier}\na[i + 1] = 2;")
    helpers = Helpers(frozenset({"Sync::operator()", "operator()"}), barrier_types=frozenset({"Sync"}))
    assert _refused(text, helpers).where.line == 7


def test_a_namespace_with_a_synchronising_function_is_no_synchronising_type():
    # once: every call into 'mylib' after an early return counted as a barrier, because
    # mylib::bsync synchronises (a refusal of kernels with no barrier at all)
    text = _kernel("int i = threadIdx.x;\nif (i >= n) return;\na[i] = mylib::twice(a[i]);")
    assert _safe(text, Helpers(frozenset({"mylib::bsync", "bsync"}))) == text


def test_without_an_early_return_they_stay_as_written():
    text = _kernel("auto sync = [&]() { __syncthreads(); };\nint i = threadIdx.x;\na[i] = 1;\nsync();\na[i + 1] = 2;")
    assert _safe(text) == text


def test_what_only_declares_names_stays_outside_the_guards():
    # once: 'using namespace cooperative_groups;' in the region went into 'if (hf_active) { }',
    # and the calls after it no longer compiled; a local struct lost its ';'
    text = _kernel("__shared__ float s[128];\nint i = threadIdx.x;\nif (i >= n) return;\n"
                   "using namespace cooperative_groups;\nnamespace g = cooperative_groups;\nusing T = float;\n"
                   "typedef int I;\nstatic_assert(sizeof(T) == 4, \"float\");\nstruct Pair { T a; I b; };\n"
                   "Pair p{a[i], 2};\ns[i] = p.a * p.b;\n__syncthreads();\na[i] = s[127 - i] + T(1);")
    out = _squash(_safe(text))
    assert ("if (hf_active && (i >= n)) hf_active = false; using namespace cooperative_groups; "
            "namespace g = cooperative_groups; using T = float; "
            "typedef int I; static_assert(sizeof(T) == 4, \"float\"); struct Pair { T a; I b; }; "
            "if (hf_active) { Pair p{a[i], 2}; s[i] = p.a * p.b; } __syncthreads();") in out


def test_a_constexpr_local_stays_outside_the_guards_where_later_code_sees_it():
    # once (FasterTransformer's masked attention): 'constexpr int K_VEC = ...' after the return and
    # used after the barrier "could not be hoisted"; a constant needs no thread to compute it
    # (a static_assert of it between ended its chunk of work)
    text = _kernel("__shared__ float s[128];\nint i = threadIdx.x;\nif (i >= n) return;\n"
                   "constexpr int kVec = sizeof(float4) / sizeof(float);\nstatic_assert(kVec == 4, \"\");\n"
                   "s[i] = a[i] * kVec;\n__syncthreads();\na[i] = s[127 - i];")
    out = _squash(_safe(text))
    assert ("if (hf_active && (i >= n)) hf_active = false; constexpr int kVec = sizeof(float4) / sizeof(float); "
            "static_assert(kVec == 4, \"\"); if (hf_active) { s[i] = a[i] * kVec; } __syncthreads();") in out


APPLY = ("__device__ void apply(float& q, int tid, int rot, int t, const float base = 1.f) { q += rot * t + base; }",
         "__device__ void apply(float& q, float& k, int tid, int rot, int t, const float base = 1.f) { k += q; }")


def _attention(work: str, condition: str = "p.rot > 0 && !p.neox") -> str:
    """A kernel of a parameter struct (``struct Params { float* out; float* extra; int rot; bool neox; }``)."""
    return _kernel(
        "__shared__ float s[128];\nint i = threadIdx.x;\nif (i >= p.rot) return;\nfloat q = p.out[i], k = 0.f;\n"
        f"if ({condition}) {{\n  {work}\n  s[i] = q;\n  __syncthreads();\n  q += s[127 - i];\n}}\n"
        "__syncthreads();\np.out[i] = q + k;", "Params p, int t")


def test_a_parameters_member_written_element_wise_leaves_its_other_members_uniform():
    # once (FasterTransformer's masked attention): 'params.cross_out[i] = v' made every read of
    # 'params' differ between threads, so 'if (params.rot > 0) { ... __syncthreads(); }' was refused
    out = _squash(_safe(_attention("p.extra[i] = q;")))
    assert "if (p.rot > 0 && !p.neox) { if (hf_active) { p.extra[i] = q; s[i] = q; } __syncthreads();" in out
    # ... and a read of the member written is no uniform value
    err = _refused(_attention("p.extra[i] = q;", "p.extra[0] > 0"))
    assert "reads memory ('p.extra[0]')" in str(err)


def test_a_parameters_member_passed_by_reference_is_the_member_changed():
    # 'apply(q, k, i, p.rot, t, 2.f)' may change only what a reference parameter takes: an overload
    # of fewer parameters than the call's arguments is not the callee, and the member passed by
    # value leaves 'p' uniform
    text = _attention("apply(q, k, i, p.rot, t, 2.f);")
    out = _squash(_safe(text, Helpers(frozenset(), {"apply": APPLY})))
    assert "if (p.rot > 0 && !p.neox) { if (hf_active) { apply(q, k, i, p.rot, t, 2.f);" in out
    by_reference = (APPLY[0], APPLY[1].replace("int tid, int rot", "int tid, int& rot"))
    err = _refused(text, Helpers(frozenset(), {"apply": by_reference}))
    assert "reads 'p.rot', whose member 'rot' is passed to 'apply' at line" in str(err)
    assert "which may take it by reference" in str(err)
    # an overload of a parameter pack or C varargs takes any number of arguments, maybe by reference
    for variadic in ("template <class... A> __device__ void apply(A&&... a) { }",
                     "__device__ void apply(float& q, ...) { }"):
        err = _refused(text, Helpers(frozenset(), {"apply": (APPLY[0], variadic)}))
        assert "whose member 'rot' is passed to 'apply'" in str(err)


def test_a_guard_that_works_before_returning_keeps_its_work_for_the_threads_it_stops():
    # once (gsplat's rasterizers: a masked tile writes its background, then returns): only
    # 'if (cond) return;' was a guard, so 'if (cond) { work; return; }' before a barrier was
    # refused; the work (pragmas kept) now runs in the threads that leave, then they stop
    text = _kernel("__shared__ float s[128];\nint i = threadIdx.x;\nbool inside = i < n;\n"
                   "if (inside && a[i] < 0.f) {\n#pragma unroll\n  for (int c = 0; c < 3; ++c) {\n    a[i] += c;\n  }\n"
                   "  return;\n}\ns[i] = inside ? a[i] : 0.f;\n__syncthreads();\nif (inside) a[i] = s[127 - i];")
    out = _safe(text)
    assert ("if (hf_active && (inside && a[i] < 0.f)) {\n  #pragma unroll\n  for (int c = 0; c < 3; ++c) {\n"
            "    a[i] += c;\n  }\n  hf_active = false;\n}") in out
    assert _squash(out).endswith("__syncthreads(); if (hf_active) { if (inside) a[i] = s[127 - i]; } }")
    # after the last barrier it stays a return, its work with it
    late = _safe(_kernel("__shared__ float s[128];\nint i = threadIdx.x;\nif (i >= n) return;\ns[i] = a[i];\n"
                         "__syncthreads();\nif (s[0] < 0.f) { a[i] = 0.f; return; }\na[i] = s[127 - i];"))
    assert "if (hf_active && (s[0] < 0.f)) { a[i] = 0.f; return; }" in _squash(late)
    # work that may leave another way is no guard's
    err = _refused(_kernel("int i = threadIdx.x;\nif (i >= n) return;\n"
                           "if (a[i] < 0.f) { if (a[0] > 0.f) return; a[i] = 0.f; return; }\n__syncthreads();"))
    assert "same branch" in str(err)


def test_a_thread_blocks_index_and_a_read_only_parameter_moved_by_it_are_uniform():
    # gsplat: 'image_id = block.group_index().x' and 'offsets += image_id * tiles' before the
    # return; a loop bound read from offsets[tile] then counts alike in every thread
    text = _kernel("auto block = cooperative_groups::this_thread_block();\nint image = block.group_index().x;\n"
                   "offsets += image * 4;\nconst int end = offsets[block.group_index().y];\n"
                   "__shared__ float s[128];\nint i = threadIdx.x;\nif (i >= n) return;\n"
                   "for (int k = 0; k < end; ++k) {\n  s[i] = a[i] + k;\n  block.sync();\n  a[i] = s[127 - i];\n"
                   "  block.sync();\n}", "float* a, const int* __restrict__ offsets, int n")
    out = _squash(_safe(text))
    assert "for (int k = 0; k < end; ++k) { if (hf_active) { s[i] = a[i] + k; } block.sync();" in out
    # not a thread's own index, nor a pointer copied elsewhere
    for changed in ("block.thread_index().x", "block.group_index().x + threadIdx.x"):
        assert "reads" in str(_refused(text.replace("block.group_index().x;", changed + ";")))
    assert "reads memory" in str(_refused(text.replace("offsets += image * 4;", "offsets = a_copy(offsets);")))
