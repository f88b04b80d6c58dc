"""Integer constant expressions as kernels write them in attributes:
``__launch_bounds__((BM * BN) / (TM * TN), 1)``, ``__launch_bounds__(NUM_THREADS)`` with a
template parameter. Macros are expanded before this sees the text; template parameters
are given their instance's values. What cannot be evaluated (a name without a value, a
``sizeof``, a call) is None: hfuse then checks nothing rather than guess.
"""
from __future__ import annotations

import ast
import re
from typing import Mapping

_INTEGER = re.compile(r"\b(0[xX][0-9a-fA-F]+|\d+)[uUlL]*\b")
_OPS = {ast.Add: lambda a, b: a + b, ast.Sub: lambda a, b: a - b, ast.Mult: lambda a, b: a * b,
        ast.Mod: lambda a, b: a - b * int(a / b), ast.LShift: lambda a, b: a << b, ast.RShift: lambda a, b: a >> b,
        ast.BitAnd: lambda a, b: a & b, ast.BitOr: lambda a, b: a | b, ast.BitXor: lambda a, b: a ^ b,
        ast.Div: lambda a, b: int(a / b)}  # C++ integer division truncates toward zero


def evaluate(text: str, names: Mapping[str, int] | None = None) -> int | None:
    """The value of the integer expression ``text``, or None when it cannot be known.
    ``names`` gives values of names, and of whole expressions (by their text without
    whitespace: what Clang answered for ``Cfg::kTile``, see ``clang_constants.py``)."""
    if names and (known := names.get("".join(text.split()))) is not None:
        return known
    python = _INTEGER.sub(lambda m: str(int(m.group(1), 0)), text.replace("&&", " and ").replace("||", " or "))
    try:
        tree = ast.parse(python.strip(), mode="eval")
    except SyntaxError:
        return None
    return _value(tree.body, names or {})


def _value(node: ast.AST, names: Mapping[str, int]) -> int | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, int) and not isinstance(node.value, bool):
        return node.value
    if isinstance(node, ast.Name):
        return names.get(node.id)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Invert)):
        inner = _value(node.operand, names)
        if inner is None:
            return None
        return -inner if isinstance(node.op, ast.USub) else (~inner if isinstance(node.op, ast.Invert) else inner)
    if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
        left, right = _value(node.left, names), _value(node.right, names)
        if left is None or right is None or (isinstance(node.op, (ast.Div, ast.Mod)) and right == 0):
            return None
        return _OPS[type(node.op)](left, right)
    return None
