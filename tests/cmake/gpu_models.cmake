# gpu_models.cmake — the models on the CUDA device against the CPU (tests/gpu/models.sh over
# matrices/gpu_engine.yaml): dit-tiny, sd3-tiny and flux-tiny in fp32 (gpu_mode deterministic:
# drift vs the CPU, two runs bitwise identical) and bf16 (drift), gpu_mode fast (difference
# reported), dp / cfg over cuda+nccl (2+ GPUs, else those cases are SKIPPED) and cuda+gloo with
# 2 ranks on one GPU (identical or drift vs the single-GPU run). Label gpu; exits 77 (skipped)
# without a CUDA build or a visible GPU. Registered in every build (the script says why it
# skips); the multi-rank cases need Gloo for the store, as every multi-rank case does.
# numerics invariant on the GPU (tests/gpu/invariant.sh, issue 19): the CPU's invariant
# matrices (dit-tiny, sd3-tiny, flux-tiny; fp32 and bf16; dp, cfg, ulysses, ring, USP at
# batches of 1, 3, 8) with every case on GPU 0: every exact layout bitwise its serial run, the
# planted faults BUG. Label gpu; 77 without a CUDA build or a visible GPU.
foreach(script models invariant)
  add_test(NAME gpu.${script}
           COMMAND sh ${CMAKE_SOURCE_DIR}/tests/gpu/${script}.sh $<TARGET_FILE:repro>
                   ${CMAKE_BINARY_DIR}/gpu-scratch/${script} ${CMAKE_SOURCE_DIR})
  set_tests_properties(gpu.${script} PROPERTIES
    LABELS gpu SKIP_RETURN_CODE 77 TIMEOUT 3600
    ENVIRONMENT "REPRO_CACHE=${CMAKE_BINARY_DIR}/test-cache;OPENBLAS_NUM_THREADS=1;OMP_NUM_THREADS=1;REPRO_PYTHON=${REPRO_PYTHON}")
endforeach()
