"""What a class body declares (``class_members.py``), as the part's copy of a block-reading
type needs it: its data members with their default initialisers, its own constructors,
and the constructors that stand in for aggregate initialisation."""
from __future__ import annotations

from hfuse.transform.class_members import aggregate_fields, constructor_edits, struct_body, value_constructors
from hfuse.transform.edits import apply_edits

TILE = "struct WarpTile { float* base; int ld = 33, pad; const float* src; int stride{2}; static int shared; };"


def test_an_aggregates_members_in_order_with_their_default_initialisers():
    # (ld's '= 33' is not pad's; static members are no part of the initialiser)
    assert aggregate_fields(TILE) == [("base", False), ("ld", True), ("pad", False), ("src", False), ("stride", True)]


def test_what_is_no_aggregate_a_constructor_can_stand_in_for():
    assert aggregate_fields("struct A { float v[4]; };") is None  # an array is no parameter
    assert aggregate_fields("struct A { int& r; };") is None
    assert aggregate_fields("struct A : B { int x; };") is None
    assert aggregate_fields("struct A { int x; __device__ A(int v) : x(v) {} };") is None
    assert aggregate_fields("struct A { __device__ int f() const { return 1; } };") is None  # nothing to give


def test_one_constructor_per_number_of_values_leaves_the_rest_as_cpp_would():
    text = value_constructors(TILE, "WarpTile", "hf_ctx(hf_part_ctx)")
    one = next(line for line in text.splitlines() if "hf_v0)" in line)
    # the members with default initialisers keep them; the others are value-initialised
    assert one.endswith(": hf_ctx(hf_part_ctx), base(hf_v0), pad(), src() {}")
    assert text.count("__device__ WarpTile(const hfuse_ctx& hf_part_ctx, ") == 5


def test_the_users_constructors_take_the_view_first_and_a_copy_copies_its_sources():
    text = ("struct R { int* p; int lane;\n"
            "  __device__ R(int* q) : p(q), lane(threadIdx.x % 32) {}\n"
            "  __device__ R(const R& o) : p(o.p), lane(o.lane) {}\n"
            "  __device__ R() { p = nullptr; }\n"
            "  __device__ R(R&&) = default;\n};")
    _, body = struct_body(text)
    edits, view_alone = constructor_edits(body, "R", "hf_ctx(hf_part_ctx)")
    out = apply_edits(text.encode(), edits)
    assert "R(const hfuse_ctx& hf_part_ctx, int* q) : hf_ctx(hf_part_ctx), p(q)" in out
    assert "R(const R& o) : hf_ctx(o.hf_ctx), p(o.p)" in out
    assert "R(const hfuse_ctx& hf_part_ctx) : hf_ctx(hf_part_ctx) { p = nullptr; }" in out
    assert "R(R&&) = default;" in out and not view_alone  # (R() takes the view now)


def test_a_type_with_constructors_of_its_own_gets_no_constructor_taking_the_view_alone():
    # a type with a constructor of its own has no implicit default one; its reference member
    # would make one ill-formed (once: nvcc "reference member ... not initialized")
    for text, alone in (("struct S { int& r; __device__ S(int& x) : r(x) {} };", False),
                        ("struct S { int v; __device__ S(int x) : v(x) {} S() = default; };", True),
                        ("struct S { int v; };", True)):
        _, body = struct_body(text)
        assert constructor_edits(body, "S", "hf_ctx(hf_part_ctx)")[1] is alone, text
