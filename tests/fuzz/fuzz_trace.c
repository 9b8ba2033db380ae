/* fuzz_trace.c — libFuzzer target: the trace reader the classifier uses
 * (rp_cls_trace_load: a safetensors file whose records carry statistics metadata). */
#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

#include "engine/trace.h"
#include "fuzz_input.h"
#include "harness/analysis/classify.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[64];
    const int fd = fuzz_input_file(data, size, path, sizeof path);
    if (fd < 0) return 0;
    rp_trace t;
    rp_error err;
    rp_error_clear(&err);
    if (rp_cls_trace_load(path, &t, &err) == RP_OK) rp_trace_free(&t);
    close(fd);
    return 0;
}
