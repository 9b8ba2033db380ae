// ops_rows.cu — row broadcasts the device's linear needs (cuda_ops.h has the contract).
// Pure copies: bitwise the CPU's memcpy of the bias into each output row.
#include "cuda_common.h"
#include "cuda_ops.h"

namespace {

// out[r][c] = bias[c] for r < rows, c < cols; grid-stride over rows.
__global__ void fill_rows_kernel(float *out, int ldo, const float *bias, int rows, int cols) {
    const int c = (int)(blockIdx.y * blockDim.x + threadIdx.x);
    if (c >= cols) return;
    const float b = bias[c];
    for (int r = blockIdx.x; r < rows; r += gridDim.x) out[(size_t)r * ldo + c] = b;
}

}  // namespace

extern "C" rp_status rp_cuda_fill_rows(float *out, int ldo, const float *bias, int rows, int cols,
                                       cudaStream_t stream, rp_error *err) {
    if (!out || !bias || rows <= 0 || cols <= 0 || ldo < cols)
        return RP_FAIL(err, RP_ERR_INVALID, "fill_rows: out %p, bias %p, %d rows of %d columns, ldo %d",
                       (void *)out, (const void *)bias, rows, cols, ldo);
    const unsigned th = cols <= 32 ? 32 : cols <= 64 ? 64 : cols <= 128 ? 128 : 256;
    const long long ty = (cols + th - 1) / th;
    if (ty > 65535) return RP_FAIL(err, RP_ERR_INVALID, "fill_rows: %d columns is too wide", cols);
    const int gx = rows < 65535 * 16 ? rows : 65535 * 16;
    RP_CUDA_LAUNCHED(err, (fill_rows_kernel<<<dim3((unsigned)gx, (unsigned)ty), th, 0, stream>>>(out, ldo, bias,
                                                                                                   rows, cols)));
    return RP_OK;
}
