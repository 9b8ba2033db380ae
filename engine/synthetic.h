/* synthetic.h — synthetic weights straight into memory, for real-shape
 * benchmarks whose checkpoints would be too large to write to disk each run.
 * Values are exactly those rp_params_write_synthetic writes (same generator),
 * so a model loaded this way is bitwise the model loaded from the file. */
#ifndef REPRO_SYNTHETIC_H
#define REPRO_SYNTHETIC_H

#include <stdint.h>

#include "error.h"
#include "params.h"
#include "safetensors.h"

/* Builds an in-memory rp_st_file (F32 tensors named as l's specs; path = label)
 * that rp_st_find / rp_st_read_f32 / rp_st_close use like a file from disk. */
rp_status rp_st_synthetic(const rp_param_list *l, uint64_t weight_seed, const char *label,
                          rp_st_file **out, rp_error *err);

#endif
