"""The user's macros written back into the fused file, only where that is proved."""
from pathlib import Path

from hfuse.codegen.macros import MacroSections
from hfuse.frontend.extract import load_source

FILE = """#define TILE 32
#define SQR(x) ((x)*(x))
#define TID threadIdx.x
#define HALF (TILE / 2)
#define CAT(a, b) a##b
#define UNROLL 4
__device__ float f(float* a, int n) {
  float s[TILE];
  s[TID % TILE] = SQR(a[TID]) + CAT(1, 0) + HALF;
#pragma unroll UNROLL
  for (int k = 0; k < 4; ++k) s[k] += k;
  return s[0];
}
"""


def _section(tmp_path: Path, text: str, rewrite=lambda expanded: expanded):
    path = tmp_path / "k.cu"
    path.write_text(text)
    source = load_source(path)
    item = next(i for i in source.items if i.function is not None and i.function.name == "f")
    expanded = rewrite(item.text)
    return expanded, MacroSections.of([source]).section([(expanded, item.file, item.line)])


def test_uses_whose_expansion_is_untouched_come_back_and_are_defined_around(tmp_path):
    rewrite = lambda text: text.replace("threadIdx.x", "hf_ctx.threadIdx.x")  # as the part's rewrite does
    expanded, (texts, defines, undefs) = _section(tmp_path, FILE, rewrite)
    assert "float s[TILE];" in texts[0] and "+ HALF;" in texts[0]
    # TID's expansion was rewritten: written expanded, and so is the use it sits in (never
    # 'hf_ctx.TID', which would expand alike and read wrong)
    assert "s[hf_ctx.threadIdx.x % TILE] = ((a[hf_ctx.threadIdx.x])*(a[hf_ctx.threadIdx.x]))" in texts[0]
    assert "TID" not in texts[0] and "CAT" not in texts[0]  # ## is never written back
    assert "#pragma unroll 4" in texts[0]  # a directive keeps hfuse's text
    # HALF names TILE: both defined, in the order the file defines them, and undefined after
    assert defines == ["#define TILE 32", "#define HALF (TILE / 2)"]
    assert undefs == ["#undef TILE", "#undef HALF"]


def test_a_function_like_use_comes_back_whole(tmp_path):
    expanded, (texts, defines, _) = _section(tmp_path, FILE)
    assert "s[TID % TILE] = SQR(a[TID]) + 10 + HALF;" in texts[0]
    assert "#define SQR(x) ((x)*(x))" in defines and "#define TID threadIdx.x" in defines


def test_a_macro_named_only_in_a_kept_uses_arguments_is_defined_too(tmp_path):
    # once: ggml's GGML_TABLE_BEGIN(uint32_t, iq1s_grid_gpu, NGRID_IQ1S) came back with
    # GGML_TABLE_BEGIN defined around it and NGRID_IQ1S not ("identifier is undefined")
    text = ("#define NGRID 8\n#define TABLE(type, name, size) type name[size]\n"
            "__device__ float f(int i) { TABLE(float, t, NGRID); t[i] = 1.f; return t[0]; }\n")
    expanded, (texts, defines, undefs) = _section(tmp_path, text)
    assert "TABLE(float, t, NGRID);" in texts[0]
    assert defines == ["#define NGRID 8", "#define TABLE(type, name, size) type name[size]"]
    assert undefs == ["#undef NGRID", "#undef TABLE"]


def test_a_definition_naming_a_kept_macro_as_written_keeps_none_in_its_section(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text(FILE)
    source = load_source(path)
    item = next(i for i in source.items if i.function is not None and i.function.name == "f")
    other = "__device__ int g(int TILE) { return TILE; }"  # (compiled after an #undef TILE)
    texts, defines, _ = MacroSections.of([source]).section([(item.text, item.file, item.line), (other, None, 0)])
    assert texts == [item.text, other] and defines == []


def test_a_macro_redefined_after_its_use_stays_expanded(tmp_path):
    text = "#define N 8\n__device__ int f() { return N; }\n#undef N\n#define N 16\n"
    expanded, (texts, defines, _) = _section(tmp_path, text)
    assert "return 8;" in expanded and texts == [expanded] and defines == []


def test_nothing_to_give_back_leaves_the_text_as_it_is(tmp_path):
    text = "#define UNUSED 1\n__device__ int f(int x) { return x + 1; }\n"
    expanded, (texts, defines, undefs) = _section(tmp_path, text)
    assert texts == [expanded] and defines == [] and undefs == []


def test_a_name_two_files_define_differently_is_defined_once_for_the_first(tmp_path):
    # one part's code can come from two sources (a header another input read first)
    first, second = tmp_path / "a.cu", tmp_path / "b.cu"
    first.write_text("#define N 8\n__device__ int f() { return N; }\n")
    second.write_text("#define N 16\n__device__ int g() { return N + 1; }\n")
    a, b = load_source(first), load_source(second)
    f, g = (next(i for i in s.items if i.function is not None) for s in (a, b))
    texts, defines, _ = MacroSections.of([a, b]).section([(f.text, f.file, f.line), (g.text, g.file, g.line)])
    assert texts == ["__device__ int f() { return N; }", "__device__ int g() { return 16 + 1; }"]
    assert defines == ["#define N 8"]


def test_a_file_gone_since_it_was_read_leaves_its_definitions_expanded(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("#define N 8\n__device__ int f() { return N; }\n")
    source = load_source(path)
    item = next(i for i in source.items if i.function is not None)
    path.unlink()
    texts, defines, _ = MacroSections.of([source]).section([(item.text, item.file, item.line)])
    assert texts == ["__device__ int f() { return 8; }"] and defines == []
