"""C99 compound literals as C++ list initialisation (for NVRTC), and what is left alone."""
from __future__ import annotations

import pytest

from hfuse.transform.compound_literals import without_compound_literals


@pytest.mark.parametrize("written,expected", [
    ("f((struct pt){a, b});", "f(pt{a, b});"),
    ("f((float2){1.f, 2.f});", "f(float2{1.f, 2.f});"),
    ("f((ns::T<int>){1});", "f(ns::T<int>{1});"),
    ("f((int){3});", "f(int{3});"),
])
def test_a_compound_literal_becomes_list_initialisation(written, expected):
    assert without_compound_literals(f"void g() {{ {written} }}") == f"void g() {{ {expected} }}"


@pytest.mark.parametrize("written", [
    "f((unsigned int){5});",       # a functional cast cannot name 'unsigned int'
    "f((const struct pt){a, b});",  # nor a qualified type
    "f((int[]){1, 2, 3});",         # nor an array
    "f((struct { int a; }){1});",   # nor an unnamed struct
    "f((float)(x));",               # a cast is no literal
])
def test_what_cpp_cannot_spell_that_way_is_left_as_written(written):
    assert without_compound_literals(f"void g() {{ {written} }}") == f"void g() {{ {written} }}"
