"""The integer constants fusion needs of one kernel instance: its template arguments, its
launch bound, the tile sizes its body cuts the block into.

hfuse's evaluator (``frontend/constant.py``) takes literals, operators, the instance's
template arguments and the constants the kernel declares from those. What it cannot
evaluate (a file-scope ``constexpr``, an enumerator, ``Cfg::kTile``, ``Pow2<3>::value``,
``sizeof``) becomes a ``ConstantQuestion`` for Clang: the expression as written, with the
kernel's local constants replaced by their initializers and its template parameters by the
instance's arguments, looked up in the kernel's namespace. The answers travel with the
instance (``PreparedKernel.constants``), keyed by the text as written, so each rewrite
that evaluates that text gets them (``evaluate``'s whole-expression lookup).

A helper the kernel calls may cut the block too (DeepSpeed's dequantisation helpers:
``tiled_partition<hw_warp_size>(tb)``, a file-scope ``constexpr`` of a header): its tile
sizes are asked the same way, in the helper's namespace, unless they depend on the helper's
own template parameters (no single answer); the answers travel keyed by the helper's place
(``PreparedKernel.helper_constants``).
"""
from __future__ import annotations

import re
from pathlib import Path
from typing import Mapping, Sequence

from ..frontend.clang_constants import ConstantQuestion
from ..frontend.constant import evaluate
from ..frontend.model import Function
from ..frontend.parse import parse
from .cooperative_groups import local_constant_initializers, local_constants, tile_size_texts

_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


def template_constants(kernel: Function, given: Sequence[str]) -> tuple[tuple[str, int], ...]:
    """The kernel's template parameters whose arguments in this instance are integers."""
    values = ((p, evaluate(a)) for p, a in zip(kernel.template_params, kernel.complete_template_args(given)) if p)
    return tuple((p, v) for p, v in values if v is not None)


def constant_questions(kernel: Function, given: Sequence[str]) -> list[tuple[str, ConstantQuestion]]:
    """(text as written, question) for each constant of the instance that hfuse's evaluator
    cannot evaluate: the ``__launch_bounds__`` block size and the kernel's tile sizes."""
    root = parse(kernel.text.encode()).root_node
    known = dict(template_constants(kernel, given))
    known.update(local_constants(root, known))
    written = [*kernel.launch_bounds[:1]] if kernel.launch_bounds else []
    written += tile_size_texts(root)
    unknown = [text for text in dict.fromkeys(written) if evaluate(text, known) is None]
    if not unknown:
        return []
    arguments = dict(zip(kernel.template_params, kernel.complete_template_args(given)))
    initializers: dict[str, str] = {}
    for name, text in local_constant_initializers(root).items():  # each from the ones before it
        initializers[name] = f"({_substituted(text, initializers, arguments)})"
    return [(text, ConstantQuestion(kernel.file, kernel.scope, _substituted(text, initializers, arguments)))
            for text in unknown]


def helper_questions(helper: Function, file: Path) -> list[tuple[str, ConstantQuestion]]:
    """(text as written, question) for each tile size of ``helper`` that hfuse's evaluator
    cannot evaluate and that names none of its template parameters; asked at the end of
    ``file``, the kernel's, which sees every declaration a helper it calls sees. None of a
    member function: its class's template parameters are not its own to tell apart."""
    if helper.owner is not None:
        return []
    root = parse(helper.text.encode()).root_node
    unknown = [text for text in dict.fromkeys(tile_size_texts(root)) if evaluate(text, local_constants(root)) is None]
    initializers: dict[str, str] = {}
    for name, text in local_constant_initializers(root).items():
        initializers[name] = f"({_substituted(text, initializers, {})})"
    own = {p for p in helper.template_params if p}
    asked = [(text, _substituted(text, initializers, {})) for text in unknown]
    return [(text, ConstantQuestion(file, helper.scope, expression)) for text, expression in asked
            if not own & set(_NAME.findall(expression))]


def _substituted(text: str, initializers: Mapping[str, str], arguments: Mapping[str, str]) -> str:
    """``text`` with local constants replaced by their (already substituted) initializers and
    template parameters by the instance's arguments; names after ``.``/``::`` are members."""
    def name(match: re.Match) -> str:
        before = text[: match.start()].rstrip()
        if before.endswith((".", "::", "->")):
            return match.group()
        word = match.group()
        return initializers.get(word) or (f"{arguments[word]}" if word in arguments else word)

    return _NAME.sub(name, text)
