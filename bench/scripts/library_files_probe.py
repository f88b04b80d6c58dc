"""Kernels of a public library's ``.cu`` files, read with the flags its own build uses, each
fused with the trivial partner in both orders and compiled with nvcc and as ``hfuse tune``
compiles it (``library_kernels_probe.probe``). The library is not in the repository (its
code is not ours): give the folder of its sources, the ``csrc`` folder of its sdist
(DeepSpeed 0.15.4: ``pip download --no-deps --no-binary=:all: deepspeed==0.15.4``; vLLM
0.6.3, llama-cpp-python 0.3.16 (ggml's CUDA backend, ``vendor/llama.cpp/ggml/src/ggml-cuda``),
auto-gptq 0.7.1 (``autogptq_extension``), causal-conv1d 1.7.0, mamba-ssm 2.3.1 and vLLM 0.19.1
(``csrc`` each), mmcv 2.2.0 (``mmcv/ops/csrc``), flash-attn 2.8.3 (``csrc/layer_norm``),
optimum-quanto 0.2.7 (``optimum/quanto/library/extensions/cuda``), AQLM 1.1.7
(``src/aqlm/inference_kernels``), HQQ 0.2.8 (``hqq/kernels``), GPTQModel 7.7.0
(``gptqmodel_ext``), torch-scatter 2.1.2 (``csrc``), nerfacc 0.5.3 (``nerfacc/cuda/csrc``), MegaBlocks
0.10.0 (``csrc``), exllamav2 0.0.4 (``exllamav2/exllamav2_ext/cuda``), FlashInfer 0.7.4 (the sdist's root;
``TVM_FFI_INCLUDE``: the ``tvm_ffi/include`` folder of an apache-tvm-ffi wheel), xformers 0.0.35, LightSeq
3.0.1, chamferdist 1.0.3, torch-spline-conv 1.2.2, warp-rnnt 0.7.0, torch-points-kernels 0.7.0, torch-harmonics
0.8.1, DCNv4 1.0.0.post2, fairseq 0.12.2, pytorch-fast-transformers 0.4.0, torchsort 0.1.9, inplace-abn 1.1.0,
torch-sparse 0.6.9 and MinkowskiEngine 0.5.4 (the sdists' roots; its ``cblas.h``: Debian's libopenblas-dev), Transformer Engine 2.9.0 (``common_headers`` of the transformer_engine_torch sdist;
``TE_SYSTEM_INCLUDES``: cuDNN's, NCCL's, cuDNN frontend's and MathDx's include folders): their sdists from PyPI's file
host, as pip cannot build their metadata here). Most include PyTorch's headers, and ggml cuBLAS's: run it where torch
and pip's CUDA headers are installed::

    python bench/scripts/library_files_probe.py --root DIR/csrc --cases deepspeed-0.15.4 \\
        --out bench/results/cpu/library_files_deepspeed_0.15.4.json

Every ``__global__`` of the files is a case: a kernel template with the template arguments
and block of its library's table (as the library's launchers instantiate it), any other at a
block of 128 (or the one given there, or its ``__launch_bounds__``); kernels of one name by the
line they start on. A kernel template none of those gives an instance of is counted apart
(``not_probed``), not as a failure. ``--update`` reruns some files of an earlier result.
"""
from __future__ import annotations

import argparse
import json
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from library_kernels_probe import probe, summary  # noqa: E402
from library_tables import LIBRARIES, Library  # noqa: E402

from hfuse.frontend.options import CompileOptions  # noqa: E402
from hfuse.spec import Dim3, KernelSpec  # noqa: E402
from hfuse.toolkit import cuda_include_dirs  # noqa: E402

_KERNEL = re.compile(r"(?:static\s+)?__global__\s+(?:void\s+)?(?:__launch_bounds__\s*\([^)]*\)\s*)?(?:void\s+)?"
                     r"(?:std::enable_if_t<.*?>\s*)?(\w+)\s*\(", re.DOTALL)
"""(The SFINAE return type of vLLM's ``fused_add_rms_norm_kernel``: up to the first ``>`` a
name and ``(`` follow.)"""


def _blanked(text: str) -> str:
    """The text with comments and preprocessor lines blanked (newlines kept, so offsets hold)."""
    def blank(match: re.Match) -> str:
        return re.sub(r"[^\n]", " ", match.group())
    return re.sub(r"//[^\n]*|/\*.*?\*/|^[ \t]*#[^\n]*", blank, text, flags=re.DOTALL | re.MULTILINE)


_HEADER = re.compile(r"template\s*<[^;{}]*>\s*(?:__launch_bounds__\s*\([^;{}]*\)\s*)?(?:void\s+)?$")
"""A template header right before a kernel (ggml's ``__launch_bounds__(...)`` may stand between, and
xformers writes ``void __global__``)."""


def kernels(path: Path) -> list[tuple[str, int, bool]]:
    """(name, the line its definition starts on, whether it is a template) of each kernel; a
    prototype only where no definition of its name follows (a template's, whose instances then
    are explicit specialisations: it is the kernel asked for). Commented-out kernels are not kernels."""
    text = _blanked(path.read_text())
    found, prototypes = [], []
    for match in _KERNEL.finditer(text):
        before = text[max(0, match.start() - 600):match.start()]
        header = _HEADER.search(before)
        start = match.start() - len(before) + header.start() if header else match.start()
        rest = re.search(r"[;{]", text[match.end():])
        declared_only = rest is not None and rest.group() == ";"
        (prototypes if declared_only else found).append(
            (match.group(1), text.count("\n", 0, start) + 1,
             header is not None and "<>" not in "".join(header.group().split())))
    defined = {(name, templated) for name, _, templated in found}
    return sorted(found + [p for p in prototypes if (p[0], p[2]) not in defined], key=lambda k: k[1])


_LITERAL = r"(?:[\w:]+(?:<[\w:, ]*>)?|-?\d+[uUlLfF]*)"
"""A template argument written as a literal, a type or a qualified constant (``256``, ``half``,
``c10::Half``, ``Vec<int, 4>``): no name of the launching function's own."""


_TYPES = frozenset({"float", "double", "half", "__half", "half2", "__half2", "nv_bfloat16", "__nv_bfloat16", "int",
                    "unsigned", "int8_t", "uint8_t", "int16_t", "uint16_t", "int32_t", "uint32_t", "int64_t",
                    "uint64_t", "bool", "char"})


def launched(path: Path, name: str) -> tuple[tuple[str, ...], tuple[int, ...]] | None:
    """The template arguments and block (none where it is no literal) of the first launch of
    kernel ``name`` in ``path`` whose arguments are literals (a ``<<<...>>>`` launch or a kernel
    pointer taken)."""
    text = _blanked(path.read_text())
    instance = re.compile(rf"\b{re.escape(name.split('::')[-1])}\s*<\s*({_LITERAL}(?:\s*,\s*{_LITERAL})*)\s*>"
                          rf"\s*(<<<[^>]*>>>|[,);])")
    for match in instance.finditer(text):
        arguments = tuple(a.strip() for a in re.split(r",(?![^<]*>)", match.group(1)))
        if not all(re.fullmatch(r"-?\d+[uUlLfF]*|true|false", a) or a in _TYPES or "::" in a for a in arguments):
            continue  # (a parameter of the launcher's, a macro's, a constant of its own: not a literal)
        block = re.match(r"<<<[^,]*,\s*(\d+)\s*[,>]", match.group(2))
        return arguments, ((int(block.group(1)),) if block else ())
    return None


def _bound(path: Path, line: int) -> int | None:
    """The kernel's ``__launch_bounds__`` where it is a number (the block its launcher uses)."""
    head = _blanked(path.read_text()).split("\n")[line - 1:line + 3]
    found = re.search(r"__launch_bounds__\s*\(\s*(\d+)\s*[,)]", "\n".join(head))
    return int(found.group(1)) if found else None


def _included(path: Path, root: Path, included_kernels: tuple, seen: set) -> list[Path]:
    """The headers of the ``included_kernels`` folder that ``path`` includes and no file before it did."""
    if not included_kernels:
        return []
    folder = root / included_kernels[0]
    headers = []
    for name in re.findall(r'^\s*#\s*include\s*"([^"]+)"', path.read_text(), re.MULTILINE):
        header = folder / name
        if header.is_file() and header not in seen:
            seen.add(header)
            headers.append(header)
    return headers


def _header_cases(path: Path, header: Path, root: Path, library: Library, options: CompileOptions,
                  workdir: Path) -> list[dict]:
    """Rows of every kernel of ``header``, fused from ``path`` (the file that includes it)."""
    rows = []
    _, default, block = library.included_kernels
    relative = str(header.relative_to(root))
    found = kernels(header)
    templates = {name for name, _, templated in found if templated}
    for name, line, templated in found:
        row = {"kernel": f"{path.relative_to(root)}:{relative}:{name}@{line}"}
        given, block_of = library.template_arguments.get((relative, name, line), (None, block))
        if not templated and name in templates:
            # an explicit specialisation (mmcv's sync_bn for at::Half): the instance of its template
            # it is for, where the table says which (line None: hfuse finds it from the arguments)
            if given is None:
                rows.append({**row, "not_probed": "an explicit specialisation the script's table names no instance of"})
            else:
                rows += probe(KernelSpec(path, name, Dim3(*block_of), tuple(given)), options, workdir,
                              {**row, "template_args": list(given)}, nvcc_once=True)
            continue
        if given is None:
            parameters = _template_parameters(header, line) if templated else []
            if len(parameters) != len(default if templated else ()) or not all(
                    re.match(r"(?:typename|class)\b", p) for p in parameters):
                rows.append({**row, "not_probed": "no template arguments in the script's table"})
                continue
            given = default if templated else ()
        rows += probe(KernelSpec(path, name, Dim3(*block_of), tuple(given)), options, workdir,
                      {**row, "template_args": list(given)}, nvcc_once=True)
    return rows


def _template_parameters(path: Path, line: int) -> list[str]:
    """The parameters the template header starting on ``line`` declares (at top level)."""
    text = _blanked(path.read_text())
    start = sum(len(row) + 1 for row in text.split("\n")[:line - 1])
    header = text[text.index("<", start) + 1:]
    depth, parameters = 0, [""]
    for char in header:
        if char in "<([":
            depth += 1
        elif char in ")]" or (char == ">" and depth):
            depth -= 1
        elif char == ">":
            break
        elif char == "," and depth == 0:
            parameters.append("")
            continue
        parameters[-1] += char
    return [p.strip() for p in parameters]


def _current(row: dict) -> dict:
    """A row of an earlier result as this script writes it now (a kernel it had no instance of
    was a refusal then, and is no kernel probed now)."""
    if row.get("refusal") == "no template arguments in the script's table":
        return {"kernel": row["kernel"], "not_probed": row["refusal"]}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--root", required=True, type=Path, help="the folder of the library's sources")
    parser.add_argument("--cases", required=True, choices=sorted(LIBRARIES))
    parser.add_argument("--only", nargs="*", default=(), help="files whose path holds one of these")
    parser.add_argument("--out", required=True, type=Path)
    parser.add_argument("--update", type=Path, help="an earlier result of the library whose rows of the files "
                        "probed now are replaced (a rerun of the files that failed, the others kept as measured)")
    args = parser.parse_args()
    library = LIBRARIES[args.cases]
    options = CompileOptions.from_flags(  # (PyTorch's headers are found by hfuse itself)
        include_dirs=[*(str(args.root / d) for d in library.includes), *cuda_include_dirs()], std=library.std,
        system_include_dirs=[str(args.root / d) for d in library.system_includes],
        defines=list(library.defines), undefines=list(library.undefines), language_flags=list(library.flags),
        pre_includes=[str(args.root / f) for f in library.pre_includes])
    arguments = library.template_arguments
    rows, seen = [], set()
    with tempfile.TemporaryDirectory() as tmp:
        # (the files named, headers too: Transformer Engine's kernels are templates in its .cuh headers, whose
        # instantiating .cu files its PyTorch sdist does not carry)
        for path in sorted(args.root / f for f in library.files) if library.files else sorted(args.root.rglob("*.cu")):
            relative = str(path.relative_to(args.root))
            if any(s in relative for s in library.skipped) \
                    or (args.only and not any(o in relative for o in args.only)):
                continue
            for name, line, templated in kernels(path):
                if (relative, line) in library.inactive:
                    continue
                row = {"kernel": f"{relative}:{name}@{line}"}
                every_kernel = library.every_kernel.get(relative)
                if templated and (relative, name, line) not in arguments and every_kernel is None \
                        and library.launched and (found := launched(path, name)) is not None:
                    # (the first instance the file's own launches name in literals; its bound, or 256, where
                    # the launch's block is no literal)
                    every_kernel = found if found[1] else (found[0], (_bound(path, line) or 256,))
                if templated and (relative, name, line) not in arguments and every_kernel is None:
                    rows.append({**row, "not_probed": "no template arguments in the script's table"})
                    continue
                default = (every_kernel[0] if templated else (), every_kernel[1]) if every_kernel else \
                    ((), (_bound(path, line) or 128,))
                given, block = arguments.get((relative, name, line), default)
                spec = KernelSpec(path, name, Dim3(*block), given, line=line)
                rows += probe(spec, options, Path(tmp), {**row, "template_args": list(given)}, nvcc_once=True)
            for header in _included(path, args.root, library.included_kernels, seen):
                rows += _header_cases(path, header, args.root, library, options, Path(tmp))
            for name, given, block in library.header_kernels.get(relative, ()):
                spec = KernelSpec(path, name, Dim3(*block), given)
                rows += probe(spec, options, Path(tmp), {"kernel": f"{relative}:{name}", "template_args": list(given)},
                              nvcc_once=True)
    if args.update is not None:
        probed = {row["kernel"].split(":")[0] for row in rows}
        rows = [_current(row) for row in json.loads(args.update.read_text())["rows"]
                if row["kernel"].split(":")[0] not in probed] + rows
    result = summary(rows, cases=args.cases, root=str(args.root), **({"updated_from": args.update.name}
                                                                    if args.update is not None else {}))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n")
    print(f"{result['fused_and_compiled_in_both_orders']}/{result['kernels']} kernels fused and compiled (nvcc and "
          f"NVRTC) in both orders; wrote {args.out}")


if __name__ == "__main__":
    main()
