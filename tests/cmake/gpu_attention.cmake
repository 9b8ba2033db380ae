# GPU attention test (label gpu): every CUDA attention variant against the CPU math
# attention; exits 77 (skipped) when no CUDA device is visible. Built only with CUDA.
repro_cuda_test(gpu.attention test_cuda_attention.c 0)
# The canonical attention of numerics invariant on the device (issue 19) against the CPU's
# rp_attention_canonical, bit for bit: label gpu; 77 without a CUDA device.
repro_cuda_test(gpu.attention_canonical test_cuda_attention_canonical.c 600)
