# GPU GEMM (cuBLASLt) against the CPU's rp_gemm: label gpu; exits 77 (skipped) when no
# CUDA device is visible. Built only when CMake found nvcc.
repro_cuda_test(gpu.gemm test_cuda_gemm.c 1200)
# The invariant GEMM on the device (numerics invariant, issue 19) against the CPU's
# rp_gemm_invariant, bit for bit: label gpu; 77 without a CUDA device.
repro_cuda_test(gpu.gemm_invariant test_cuda_gemm_invariant.c 600)
