// attention_flash_inst.cu — one set of the flash kernels: the 9 tile shapes of
// rp_flash::launch_tiles<RP_FLASH_NG, RP_FLASH_T> (attention_flash_kernel.cuh). The build
// compiles this file once per (NG, T) of RP_FLASH_INSTANCES, with those two defined
// (CMakeLists.txt, repro_flash_<ng>_<t>), so the kernels compile in parallel.
#include "attention_flash_kernel.cuh"

#if !defined(RP_FLASH_NG) || !defined(RP_FLASH_T)
#error "attention_flash_inst.cu is compiled with -DRP_FLASH_NG=<1..4> -DRP_FLASH_T=<float|uint16_t>"
#endif

template rp_status rp_flash::launch_tiles<RP_FLASH_NG, RP_FLASH_T>(int, int, cudaStream_t, const rp_flash::FlashArgs &,
                                                                    unsigned, int, rp_error *);
