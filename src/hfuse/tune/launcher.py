"""Launch what a plan decided, from a program: ``plan.launcher()(args_per_kernel, ...)``."""
from __future__ import annotations

from typing import Any, Sequence

from ..codegen.launcher import pack_launch
from ..errors import HFuseError
from ..runtime.compile import Compiler
from ..spec import Dim3
from .plan import Plan


class PlanLauncher:
    """Compiles the plan's fused kernel once and launches it with the originals' arguments.

    ``args_per_kernel`` are the arguments each original kernel takes, in plan order;
    ``grids`` and ``smems`` default to the ones the plan was tuned with.
    """

    def __init__(self, plan: Plan, compiler: Compiler | None = None):
        if not plan.should_fuse:
            raise HFuseError(f"the plan says not to fuse ({plan.reason}); launch the kernels as before")
        self.plan = plan
        self.compiler = compiler or Compiler()
        self.kernel = self.compiler.get(plan.fused_source, plan.fused_name)

    def __call__(self, args_per_kernel: Sequence[Sequence[Any]], *, grids: Sequence[Dim3] | None = None,
                 smems: Sequence[int] | None = None, stream: Any = None) -> None:
        plan = self.plan
        if len(args_per_kernel) != len(plan.kernels):
            raise HFuseError(f"the plan fuses {len(plan.kernels)} kernels ({', '.join(plan.kernels)}); "
                             f"{len(args_per_kernel)} argument lists given")
        launch = pack_launch(plan.fused_block.size, args_per_kernel, grids or plan.grids,
                             smems if smems is not None else plan.smems)
        self.kernel.launch(launch.grid, launch.block, launch.args, launch.shared_mem, stream)
