# gpu_cuda_models.cmake — whole DiT / SD3 / FLUX generations on the CUDA device against the
# CPU (tests/gpu/test_cuda_models.c): deterministic twice bitwise, fp32 within a derived
# NMSE bound, fast / tf32 / bf16 reported. Label gpu; 77 without a visible GPU.
repro_cuda_test(gpu.models_c test_cuda_models.c 900)
