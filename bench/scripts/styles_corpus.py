"""The style corpus (tests/corpus/styles: other people's C++) measured on the CPU: each
kernel fused with the trivial partner and compiled with nvcc, with NVRTC, and as ``hfuse
tune`` compiles it (NVRTC, or nvcc where the fused file keeps PyTorch's headers, which NVRTC
cannot read), every ordered pair of files fused, with the time ``hfuse.fuse`` takes. Run from the repository root:
``python bench/scripts/styles_corpus.py``; writes ``bench/results/cpu/styles_corpus.json``.
"""
from __future__ import annotations

import datetime
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path[:0] = [str(ROOT / "tests")]

from corpus.styles.manifest import CASES, HERE, options_of  # noqa: E402
from toolchain import compile_nvcc, compile_nvrtc  # noqa: E402

from hfuse.api import fuse  # noqa: E402
from hfuse.errors import HFuseError  # noqa: E402
from hfuse.runtime.compile import Compiler, toolchain_for  # noqa: E402
from hfuse.spec import Dim3, KernelSpec  # noqa: E402
from hfuse.toolkit import pytorch_include_dirs  # noqa: E402

PARTNER = KernelSpec(HERE / "partner.cu", "axpy", Dim3(96))


def main() -> None:
    fused_ok, nvcc_ok, nvrtc_ok, tune_ok, problems, ms = 0, 0, 0, 0, [], []
    with tempfile.TemporaryDirectory() as tmp:
        for case in CASES:
            if case.missing:
                problems.append(f"{case.name}: not run: {case.missing}")
                continue
            start = time.perf_counter()
            try:
                fused = fuse([PARTNER, case.spec()], options=case.options())
            except HFuseError as exc:
                problems.append(f"{case.name}: refused: {str(exc).splitlines()[0]}")
                continue
            ms.append(1000 * (time.perf_counter() - start))
            fused_ok += 1
            flags = case.options().compiler_flags(pre_includes=False)
            nvcc = compile_nvcc(fused.source, flags=flags, workdir=Path(tmp), check=False)
            nvcc_ok += nvcc.ok
            nvrtc = compile_nvrtc(fused.source, [fused.name_expression],
                                  flags=case.options().compiler_flags(std=False, pre_includes=False,
                                                                      compiler="nvrtc"), check=False)
            nvrtc_ok += nvrtc.ok
            if toolchain_for([fused.source], case.options())[0] == "nvrtc":
                tune_ok += nvrtc.ok
            else:
                try:
                    Compiler.for_sources(case.options(), [fused.source], arch="sm_90").compile(
                        fused.source, [fused.name_expression])
                    tune_ok += 1
                    problems.append(f"{case.name}: keeps PyTorch's headers: hfuse tune compiles it with nvcc")
                except HFuseError as exc:
                    problems.append(f"{case.name}: hfuse tune's nvcc failed: {str(exc).splitlines()[0]}")
            problems += [f"{case.name}: {tool} failed" for tool, r in (("nvcc", nvcc), ("nvrtc", nvrtc)) if not r.ok]
    firsts = list({c.file: c for c in reversed(CASES)}.values())
    pairs = [(a, b) for a in firsts for b in firsts if a is not b and not (a.missing or b.missing)]
    pairs_ok = 0
    for a, b in pairs:
        try:
            fuse([a.spec(), b.spec()], options=options_of(a, b))
            pairs_ok += 1
        except HFuseError as exc:
            problems.append(f"{a.name} + {b.name}: refused: {str(exc).splitlines()[0]}")
    result = {
        "what": "style corpus (tests/corpus/styles): fused with a trivial partner, compiled with nvcc -arch=sm_90 "
                "and NVRTC sm_90, and as hfuse tune compiles it (tune: NVRTC, or nvcc for PyTorch's headers); every "
                "ordered pair of files fused (CPU)",
        "date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
        "machine": {"cpu": platform.processor() or platform.machine(), "cores": os.cpu_count(),
                    "python": platform.python_version(), "torch_headers": bool(pytorch_include_dirs())},
        "kernels": len(CASES), "files": len(firsts),
        "fused": fused_ok, "nvcc": nvcc_ok, "nvrtc": nvrtc_ok, "tune": tune_ok,
        "pairs": len(pairs), "pairs_fused": pairs_ok,
        "fuse_ms_median": round(statistics.median(ms), 1) if ms else None,
        "fuse_ms_max": round(max(ms), 1) if ms else None,
        "problems": problems,
    }
    out = ROOT / "bench" / "results" / "cpu" / "styles_corpus.json"
    out.write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps({k: v for k, v in result.items() if k != "problems"}, indent=1), "\n", "\n".join(problems))


if __name__ == "__main__":
    main()
