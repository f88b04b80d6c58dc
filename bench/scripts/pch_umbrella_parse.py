"""Clang's parse of a PyTorch extension file's kept headers three ways: with a PCH of
torch/extension.h alone (what clang_pch.SHARED_BASES makes), with a PCH of the file's exact set of
kept headers, and with none. Writes bench/results/cpu/clang_pch_umbrella_parse.json.

    python bench/scripts/pch_umbrella_parse.py   (PyTorch installed; a fresh cache each run)"""
from __future__ import annotations

import datetime
import json
import platform
import tempfile
import time
from pathlib import Path

from hfuse.frontend.clang import clang_arguments, cindex
from hfuse.frontend import clang_pch
from hfuse.frontend.clang_pch import errors_of, precompiled_preamble
from hfuse.frontend.options import CompileOptions

KEPT = ["#include <ATen/cuda/CUDAContext.h>", "#include <torch/extension.h>", "#include <c10/cuda/CUDAGuard.h>",
        "#include <cstdio>"]
OUT = Path(__file__).resolve().parents[2] / "bench" / "results" / "cpu" / "clang_pch_umbrella_parse.json"


def main() -> None:
    ci, why = cindex()
    assert ci is not None, why
    arguments = clang_arguments(CompileOptions.from_flags(std="c++20"))
    assert not isinstance(arguments, str), arguments
    seconds: dict[str, float] = {}
    with tempfile.TemporaryDirectory() as tmp:
        cache, unit = Path(tmp), Path(tmp) / "tu.cu"
        unit.write_text("".join(f"{line}\n" for line in KEPT) + "__global__ void k(float* a) { a[threadIdx.x] = 1.f; }\n")

        def parse(label: str, flags: list[str]) -> None:
            start = time.perf_counter()
            parsed = ci.Index.create().parse(str(unit), args=arguments + flags)
            seconds[label] = round(time.perf_counter() - start, 2)
            assert not errors_of(ci, parsed), label

        start = time.perf_counter()
        umbrella = precompiled_preamble(ci, arguments, ["#include <torch/extension.h>"], cache)
        seconds["build PCH of torch/extension.h"] = round(time.perf_counter() - start, 2)
        parse("parse with the umbrella PCH", umbrella.flags)
        parse("parse without a PCH", [])
        start = time.perf_counter()
        shared = clang_pch.precompiled_lines
        clang_pch.precompiled_lines = lambda includes: "".join(f"{line}\n" for line in includes)  # (as before)
        try:
            exact = precompiled_preamble(ci, arguments, KEPT, cache)
        finally:
            clang_pch.precompiled_lines = shared
        seconds["build PCH of the exact set"] = round(time.perf_counter() - start, 2)
        parse("parse with the exact-set PCH", exact.flags)
    OUT.write_text(json.dumps({"kept_headers": KEPT, "seconds": seconds, "date": str(datetime.date.today()),
                               "host": platform.node(), "cpus": 2}, indent=1) + "\n")
    print(json.dumps(seconds, indent=1))


if __name__ == "__main__":
    main()
