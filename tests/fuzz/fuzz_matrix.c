/* fuzz_matrix.c — libFuzzer target: the matrix loader (rp_matrix_parse: YAML, the
 * schema, expansion, validation of every case). Any input must end in RP_OK or an
 * error, within the fuzzer's time and memory limits. */
#include <stddef.h>
#include <stdint.h>

#include "harness/sweep/matrix.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rp_matrix m;
    rp_error err;
    rp_error_clear(&err);
    if (rp_matrix_parse((const char *)data, size, "fuzz.yaml", &m, &err) == RP_OK) rp_matrix_free(&m);
    return 0;
}
