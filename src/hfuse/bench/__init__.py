"""The paper's benchmark kernels (ours), their references, workloads and the evaluation."""
