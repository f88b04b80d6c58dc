"""Comments made harmless before the preprocessor sees a line, and the user's line comments
given back in the emitted file."""
from __future__ import annotations

import copy
import re

import pcpp


def quiet_comments(line: list, pp: pcpp.Preprocessor) -> list:
    """The one place comments are made harmless, per source line, before anything else.

    In a directive line (``#define HALO 1 // halo``) every comment becomes a space, so
    it never ends up in a macro body, an ``#if`` expression or a kept ``#include``. In
    code, block comments stay; a line comment becomes a block comment, so that one
    written inside a macro invocation's arguments cannot comment out the rest of the
    expansion's line. It is marked (``/*// index */``) so that the emitted file gives the
    user their line comment back wherever it still ends its line (``restore_line_comments``).
    """
    first = next((t for t in line if t.type not in pp.t_WS and t.type not in pp.t_COMMENT), None)
    directive = first is not None and first.value == "#"
    for i, tok in enumerate(line):
        if tok.type not in pp.t_COMMENT:
            continue
        tok = line[i] = copy.copy(tok)
        if directive:
            tok.type, tok.value = pp.t_SPACE, " "
        elif tok.type == pp.t_COMMENT2:
            tok.type, tok.value = pp.t_COMMENT1, "/*//" + tok.value[2:].replace("*/", "* /") + " */"
    return line


_MARKED_LINE_COMMENT = re.compile(r"/\*//((?:(?!\*/).)*) \*/(?=[ \t]*$)", re.M)


def restore_line_comments(text: str) -> str:
    """The user's ``// index`` again for each line comment ``quiet_comments`` marked
    (``/*// index */``) that still ends its line; one code follows stays a block comment."""
    return _MARKED_LINE_COMMENT.sub(r"//\1", text)
