"""The paper's 16 benchmark pairs, which kernel of each is swept, and the sizes to run.

Order and names follow ``docs/benchmarks.md`` (the paper's Figure 7/8 order). Each pair
is measured over a sweep of input sizes of ONE kernel (the *swept* kernel, marked with
``*`` in the paper's panel titles) while the other stays at its representative size, so
the execution-time ratio of the two kernels runs from about 1:4 to 4:1 (each workload's
``sweep`` goes from about a quarter to four times its ``default_size``).

Which kernel is swept:

- the paper names it for nine pairs (Evaluation text: *Batchnorm*+Hist,
  *Batchnorm*+Maxpool, *Batchnorm*+Im2Col, Hist+*Maxpool*, Hist+*Upsample*,
  Maxpool+*Upsample*, *Blake256*+Blake2B, *Blake256*+SHA256, *Blake2B*+SHA256);
- Im2Col's input was fixed in the artifact, so it is never the swept one: Hist+Im2Col
  sweeps Hist, Im2Col+Maxpool sweeps Maxpool, Im2Col+Upsample sweeps Upsample;
- Batchnorm+Upsample sweeps Batchnorm (the artifact had two Batchnorm sweeps, one per
  group of pairs; four pairs with Batchnorm, all sweep it);
- the Ethash pairs sweep the compute-bound partner (Blake2B, Blake256, SHA256): Ethash
  keeps its representative size, its 1 GiB DAG is built once per process anyway.

Quick mode runs one point per pair: both kernels at their representative size (ratio
close to 1 once the workload defaults are calibrated on the GPU).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Sequence

Category = Literal["dl", "crypto"]

DISPLAY = {
    "maxpool": "Maxpool", "batchnorm": "Batchnorm", "upsample": "Upsample", "im2col": "Im2Col",
    "hist": "Hist", "ethash": "Ethash", "sha256": "SHA256", "blake256": "Blake256", "blake2b": "Blake2B",
}
"""Workload key -> the paper's spelling."""

KERNEL_FUNCTIONS = {
    "maxpool": "maxpool2d_forward",
    "batchnorm": "batchnorm_collect_statistics",
    "upsample": "upsample_bilinear2d",
    "im2col": "im2col",
    "hist": "histogram",
    "ethash": "ethash_search",
    "sha256": "sha256_search",
    "blake256": "blake256_search",
    "blake2b": "blake2b_search",
}
"""Workload key -> the ``__global__`` function name (for Nsight Compute's kernel filter)."""

DL_KERNELS = ("maxpool", "batchnorm", "upsample", "im2col", "hist")
CRYPTO_KERNELS = ("ethash", "sha256", "blake256", "blake2b")


@dataclass(frozen=True)
class Pair:
    """Two workloads fused together, in the paper's order, and which one is swept."""

    kernels: tuple[str, str]
    """Workload keys (``registry()``), in the order of the pair's name."""
    swept: str
    """Workload key of the kernel whose size varies."""

    def __post_init__(self) -> None:
        if self.swept not in self.kernels:
            raise ValueError(f"swept kernel {self.swept} is not in the pair {self.kernels}")

    @property
    def name(self) -> str:
        """The paper's name, e.g. ``Batchnorm+Upsample``."""
        return "+".join(DISPLAY[k] for k in self.kernels)

    @property
    def title(self) -> str:
        """The name with the swept kernel starred, as in the paper's panels: ``*Batchnorm*+Upsample``."""
        return "+".join(f"*{DISPLAY[k]}*" if k == self.swept else DISPLAY[k] for k in self.kernels)

    @property
    def key(self) -> str:
        """File-name-safe key: ``batchnorm+upsample``."""
        return "+".join(self.kernels)

    @property
    def fixed(self) -> str:
        return self.kernels[1] if self.swept == self.kernels[0] else self.kernels[0]

    @property
    def category(self) -> Category:
        return "dl" if all(k in DL_KERNELS for k in self.kernels) else "crypto"


PAIRS: tuple[Pair, ...] = (
    Pair(("batchnorm", "upsample"), "batchnorm"),
    Pair(("batchnorm", "hist"), "batchnorm"),
    Pair(("batchnorm", "im2col"), "batchnorm"),
    Pair(("batchnorm", "maxpool"), "batchnorm"),
    Pair(("hist", "im2col"), "hist"),
    Pair(("hist", "maxpool"), "maxpool"),
    Pair(("hist", "upsample"), "upsample"),
    Pair(("im2col", "maxpool"), "maxpool"),
    Pair(("im2col", "upsample"), "upsample"),
    Pair(("maxpool", "upsample"), "upsample"),
    Pair(("blake2b", "ethash"), "blake2b"),
    Pair(("blake256", "ethash"), "blake256"),
    Pair(("ethash", "sha256"), "sha256"),
    Pair(("blake256", "blake2b"), "blake256"),
    Pair(("blake256", "sha256"), "blake256"),
    Pair(("blake2b", "sha256"), "blake2b"),
)


def _norm(text: str) -> str:
    return text.strip().lower().replace(" ", "")


def find_pair(name: str) -> Pair:
    """A pair by its name in any case (``Hist+Maxpool``, ``hist+maxpool``), either order."""
    wanted = _norm(name).replace("*", "")
    parts = wanted.split("+")
    for p in PAIRS:
        if wanted in (_norm(p.name), p.key) or sorted(parts) == sorted(p.kernels):
            return p
    raise ValueError(f"unknown pair '{name}' (known: {', '.join(p.name for p in PAIRS)})")


def select_pairs(spec: str | Sequence[str] | None) -> list[Pair]:
    """``None``/``all`` -> all 16; ``dl``/``crypto``; or comma-separated pair names
    (categories may be mixed in). Order: the paper's, duplicates removed."""
    if spec is None:
        return list(PAIRS)
    items = [s for s in (spec.split(",") if isinstance(spec, str) else spec) if s.strip()]
    if not items:
        return list(PAIRS)
    chosen: set[Pair] = set()
    for item in items:
        word = _norm(item)
        if word == "all":
            chosen.update(PAIRS)
        elif word in ("dl", "crypto"):
            chosen.update(p for p in PAIRS if p.category == word)
        else:
            chosen.add(find_pair(item))
    return [p for p in PAIRS if p in chosen]


def thin(values: Sequence[int], points: int | None) -> list[int]:
    """At most ``points`` of ``values``, evenly spread, first and last kept."""
    values = list(values)
    if points is None or points >= len(values):
        return values
    if points <= 1:
        return [values[len(values) // 2]]
    idx = sorted({round(i * (len(values) - 1) / (points - 1)) for i in range(points)})
    return [values[i] for i in idx]


def pair_sizes(pair: Pair, *, quick: bool, points: int | None = None,
               workloads: dict | None = None, scale: float = 1.0) -> list[dict[str, int]]:
    """The size points to run for ``pair``: each a dict workload key -> size.

    Quick: one point, both kernels at their representative (``default_size``) size.
    Full: the swept kernel over its workload's ``sweep`` (thinned to ``points``), the
    other at its representative size; the representative point is always included.
    ``scale`` multiplies every size (all sizes count work linearly, so the ratios stay
    about the same): e.g. 0.5 halves the memory and the verification cost.
    """
    if workloads is None:
        from .workloads import registry

        workloads = registry()
    fixed = workloads[pair.fixed].default_size
    swept_w = workloads[pair.swept]
    if quick:
        sizes = [swept_w.default_size]
    else:
        sizes = thin(sorted(set(swept_w.sweep)), points)
        if swept_w.default_size not in sizes:
            sizes = sorted(set(sizes) | {swept_w.default_size})
    def scaled(v: int) -> int:
        return int(v) if scale == 1.0 else max(1, int(round(v * scale)))

    return [{pair.swept: scaled(s), pair.fixed: scaled(fixed)} for s in sizes]


def representative_sizes(pair: Pair, workloads: dict | None = None, scale: float = 1.0) -> dict[str, int]:
    """Both kernels at their representative size (the ratio-1 point of the metrics)."""
    return pair_sizes(pair, quick=True, workloads=workloads, scale=scale)[0]


def make_launches(pair: Pair, sizes: dict[str, int], seed: int = 0) -> list[Any]:
    """Both workloads of the pair at ``sizes``, built once (fresh device inputs)."""
    from .workloads import registry  # needs CuPy only when called

    reg = registry()
    return [reg[k].make(int(sizes[k]), seed=seed + i) for i, k in enumerate(pair.kernels)]
