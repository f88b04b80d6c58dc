"""tree-sitter parsing of CUDA text, with the few constructs the grammar lacks masked."""
from __future__ import annotations

import re
from functools import lru_cache

import tree_sitter as ts
import tree_sitter_cuda

# Constructs tree-sitter-cuda does not know. They are blanked (same length, so every
# byte offset stays valid) in the text the parser sees; rewrites use the real text.
# ``#pragma`` lines: the grammar takes a directive for a statement, so ``for (...)``
# followed by ``#pragma unroll`` and the inner loop loses its body; blanked, the pragma
# stays in the text (and in the output) but not in the tree.
_MASKED = re.compile(rb"__align__\s*\(\s*[^()]*\)|^[ \t]*#[ \t]*pragma\b[^\n]*", re.M)


@lru_cache(maxsize=1)
def _language() -> ts.Language:
    return ts.Language(tree_sitter_cuda.language())


def parse(source: bytes) -> ts.Tree:
    masked = _MASKED.sub(lambda m: b" " * len(m.group(0)), source)
    return ts.Parser(_language()).parse(masked)


def first_error(node: ts.Node) -> ts.Node | None:
    """The first ERROR or MISSING node below ``node`` (document order), if any."""
    if not node.has_error:
        return None
    if node.type == "ERROR" or node.is_missing:
        return node
    for child in node.children:
        found = first_error(child)
        if found is not None:
            return found
    return node


def walk(node: ts.Node):
    """Every node below ``node`` (including it), document order."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(reversed(current.children))


def line_of(node: ts.Node) -> int:
    return node.start_point[0] + 1
