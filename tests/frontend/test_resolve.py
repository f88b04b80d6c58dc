"""Name resolution: which declaration a name written in some namespace refers to."""
from pathlib import Path

from hfuse.frontend.extract import model_source
from hfuse.frontend.program import Program
from hfuse.frontend.resolve import LocalNames

LIBRARY = """
namespace cg = cooperative_groups;
namespace mylib {
namespace detail {
__device__ float reduce(float v) { return v; }
}  // namespace detail
struct Params { int n; };
__device__ float scale(float v) { return 2.f * v; }   // a helper named like another namespace's kernel
__global__ void run(float* p, Params q) { p[0] = detail::reduce(scale(1.f)); }
namespace { __device__ int hidden() { return 1; } }
}  // namespace mylib
namespace other { __global__ void scale(float* p) { p[0] = 1.f; } }
namespace ml = mylib;
using namespace mylib::detail;
__global__ void top(float* p) { p[0] = reduce(2.f) + ml::scale(1.f); }
"""


def _program() -> Program:
    return Program.merge([model_source(Path("lib.cu"), LIBRARY)])


def test_names_resolve_from_the_innermost_namespace_outwards():
    r = _program().resolver
    assert r.resolve(("mylib",), "detail::reduce") == "mylib::detail::reduce"
    assert r.resolve(("mylib",), "scale") == "mylib::scale"
    assert r.resolve(("other",), "scale") == "other::scale"
    assert r.resolve(("mylib", "detail"), "Params") == "mylib::Params"
    assert r.resolve((), "Params") is None  # not visible at file scope


def test_using_directives_aliases_and_anonymous_namespaces():
    r = _program().resolver
    assert r.resolve((), "reduce") == "mylib::detail::reduce"  # using namespace mylib::detail;
    assert r.resolve((), "ml::scale") == "mylib::scale"  # namespace ml = mylib;
    assert r.resolve(("mylib",), "hidden") == "mylib::hidden"  # anonymous namespaces are transparent
    assert r.resolve((), "::mylib::Params") == "mylib::Params"


def test_function_local_using_and_alias():
    r = _program().resolver
    local = LocalNames.of_text("void f() { using namespace mylib; namespace d = mylib::detail; }")
    assert r.resolve((), "Params", local) == "mylib::Params"
    assert r.resolve((), "d::reduce", local) == "mylib::detail::reduce"


def test_cooperative_groups_under_any_spelling():
    r = _program().resolver
    assert r.is_cooperative_groups((), "cg")
    assert r.is_cooperative_groups((), "cooperative_groups") and r.is_cooperative_groups((), "::cooperative_groups")
    assert not r.is_cooperative_groups((), "mylib")
    local = LocalNames.of_text("void f() { namespace g = cooperative_groups; }")
    assert r.is_cooperative_groups(("mylib",), "g", local)


def test_kernels_are_selected_by_qualified_or_unique_plain_name():
    program = _program()
    assert program.kernel("mylib::run", Path("lib.cu")).key == "mylib::run"
    assert program.kernel("run", Path("lib.cu")).key == "mylib::run"
    assert program.kernel("other::scale", Path("lib.cu")).scope == ("other",)
    assert program.kernel("scale", Path("lib.cu")).key == "other::scale"  # mylib::scale is a helper, not a kernel


def test_a_namespace_scope_using_declaration_brings_one_name_in():
    program = Program.merge([model_source(Path("u.cu"), """
namespace d { __device__ int lanes() { return 1; } __device__ int other() { return 2; } }
namespace ops { using d::lanes; }
using ::d::other;
""")])
    resolver, functions = program.resolver, set(program.functions)
    assert resolver.resolve(("ops",), "lanes", known=functions) == "d::lanes"
    assert resolver.resolve((), "lanes", known=functions) is None  # brought into ops only
    assert resolver.resolve(("ops",), "other", known=functions) == "d::other"  # from file scope, outwards
    assert resolver.brought_by("d::lanes", functions) == [(("ops",), "d::lanes")]


def test_an_inline_namespace_is_transparent_as_in_cpp():
    # a library's ABI version (namespace lib { inline namespace v2 { ... } }): lib::warp is
    # lib::v2::warp; once, hfuse found neither, and emitted the namespace without 'inline'
    program = Program.merge([model_source(Path("i.cu"), """
namespace lib { inline namespace v2 { __device__ int warp() { return 1; } struct Pair { int a; }; } }
namespace lib { __device__ int user() { return warp() + v2::warp(); } }
namespace a::inline b { __device__ int q() { return 2; } }
""")])
    resolver, functions = program.resolver, set(program.functions)
    assert resolver.resolve((), "lib::warp", known=functions) == "lib::warp"
    assert resolver.resolve((), "lib::v2::warp", known=functions) == "lib::warp"
    assert resolver.resolve(("lib",), "v2::warp", known=functions) == "lib::warp"
    assert resolver.resolve(("lib",), "warp", known=functions) == "lib::warp"
    assert resolver.resolve((), "::a::b::q", known=functions) == "a::q"
    assert resolver.resolve((), "lib::Pair") == "lib::Pair"
    assert resolver.namespace((), "lib::v2") == "lib"


def test_an_inline_namespace_is_emitted_inline():
    from hfuse.frontend.model import namespace_wrap

    assert namespace_wrap(("lib", "inline v2"), "int x;") == (
        "namespace lib {\ninline namespace v2 {\nint x;\n}  // namespace v2\n}  // namespace lib")


POINTERS = """
typedef float (*unary_op)(float);
namespace ops { using binary_op = float (*)(float, float); typedef float fn_t(float); }
template <class T> using op_of = T (*)(T);
typedef struct { int a; } Plain;
using Vec = float*;
__device__ float twice(float v) { return 2.f * v; }
__device__ unary_op d_op = twice;
__device__ float (*d_raw[2])(float) = {twice, twice};
__device__ const ops::binary_op d_bin = nullptr;
__device__ Plain d_plain;
struct Holder { unary_op f; float (*g)(float); ops::fn_t* h; Plain p; int n; };
"""


def test_what_holds_a_functions_address_is_told_by_its_type_or_declarator():
    r = Program.merge([model_source(Path("p.cu"), POINTERS)]).resolver
    assert r.function_pointer_types == {"unary_op", "ops::binary_op", "ops::fn_t", "op_of"}
    assert r.holds_function((), "const unary_op") and r.holds_function(("ops",), "binary_op")
    assert not r.holds_function((), "Vec") and not r.holds_function((), "Plain")
    assert r.pointer_variables == {"d_op", "d_raw", "d_bin"}
    assert r.pointer_fields == {"f", "g", "h"}


def test_an_unbalanced_template_argument_list_resolves_to_nothing_and_returns():
    # once: 'Functor<half' (a template argument split at its comma) looped forever
    assert _program().resolver.resolve(("mylib",), "Functor<half") is None
