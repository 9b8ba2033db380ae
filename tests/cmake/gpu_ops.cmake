# gpu_ops.cmake — the CUDA non-GEMM operators (engine/cuda/ops_*.cu) against the CPU
# operators they mirror (tests/gpu/test_cuda_ops.c). Label gpu; exits 77 (skipped)
# when no CUDA device is visible, so CPU-only machines report it as skipped.
repro_cuda_test(gpu.ops test_cuda_ops.c 600)
