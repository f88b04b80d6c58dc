"""A kernel template's instance, named in ordinary code for Clang to instantiate and read.

In a kernel template, a call whose arguments depend on a template parameter names no
function until the template is instantiated: ``lib::block_sum<T>(v)`` finds only the
header's template, inside which ``B::Tid()`` names nothing either (PyTorch's
``BlockReduceSum<T, B = Block1D>``); ``f(n, args...)`` runs whatever functor the instance
is given. So each requested instance (``k<float, 4>``) is named after the file, in a
namespace of its own inside the kernel's (``auto* const hfuse_kernel = &k<float, 4>;``):
taking its address makes Clang instantiate it, and the instantiation's body, which
``clang.py`` walks, has every call resolved, every parameter pack expanded, every
``if constexpr`` decided and every header template it calls instantiated in turn. Its
lines are the template's own.

An instance Clang cannot instantiate (a ``static_assert`` the arguments fail, a name two
kernel templates share) is dropped, and the template alone is read, as written.
"""
from __future__ import annotations

from typing import Sequence

from .model import Function, namespace_wrap

INSTANCE_NAMESPACE = "hfuse_instance_"
"""The namespace of each reference (``hfuse_instance_0``), which no user code can name."""
INSTANCE_VARIABLE = "hfuse_kernel"


def instance_reference(function: Function, args: Sequence[str], index: int) -> str | None:
    """The text that makes Clang instantiate kernel template ``function`` with ``args``
    (None: not a template, an explicit specialisation, or no arguments given)."""
    if not function.is_template or function.is_explicit_specialisation or not args:
        return None
    reference = f"&{function.name}<{', '.join(args)}>"
    text = f"namespace {INSTANCE_NAMESPACE}{index} {{ auto* const {INSTANCE_VARIABLE} = {reference}; }}"
    return namespace_wrap(function.scope, text) + "\n"
