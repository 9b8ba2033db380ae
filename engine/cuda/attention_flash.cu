// attention_flash.cu — FlashAttention-2 forward on CUDA cores, fp32 (contract in
// cuda_attention.h; the kernel and its design: attention_flash_kernel.cuh; the CPU twin is
// engine/attention/flash.c): the plan (tiles, shared memory) and the run (the dispatch to
// the kernel set of the head dim's column groups and the input type).
#include "attention_flash_kernel.cuh"

using rp_flash::FlashArgs;
using rp_flash::flash_smem_floats;
using rp_flash::launch_tiles;

namespace {

template <typename T>
rp_status launch_ng(int NG, int BQ, int BK, cudaStream_t stream, const FlashArgs &args, unsigned grid, int smem,
                    rp_error *err) {
    switch (NG) {
    case 1: return launch_tiles<1, T>(BQ, BK, stream, args, grid, smem, err);
    case 2: return launch_tiles<2, T>(BQ, BK, stream, args, grid, smem, err);
    case 3: return launch_tiles<3, T>(BQ, BK, stream, args, grid, smem, err);
    case 4: return launch_tiles<4, T>(BQ, BK, stream, args, grid, smem, err);
    default: break;
    }
    return RP_FAIL(err, RP_ERR_UNSUPPORTED, "flash attention: no kernel for %d column groups of 32", NG);
}

bool tile_ok(int t) { return t == 32 || t == 64 || t == 128; }

}  // namespace

rp_status rp_cuda_attn_flash_plan_(int smem_optin, const rp_cuda_attn_opts *o, int D, rp_cuda_attn_used *u,
                                   rp_error *err) {
    const int qc = o->q_chunk ? o->q_chunk : RP_CUDA_ATTN_FLASH_Q_DEFAULT;
    const int kc = o->kv_chunk ? o->kv_chunk : RP_CUDA_ATTN_FLASH_KV_DEFAULT;
    if (o->tf32)
        return RP_FAIL(err, RP_ERR_INVALID, "flash attention (cuda): tf32=%d, but flash has no TF32 path "
                       "(fp32 FMA only); use tf32=0", o->tf32);
    if (D < 4 || D > RP_CUDA_ATTN_FLASH_MAX_D || D % 4 != 0)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "flash attention (cuda): head dim D=%d unsupported (the kernel "
                       "takes a multiple of 4 in 4..%d); use math or split", D, RP_CUDA_ATTN_FLASH_MAX_D);
    if (!tile_ok(qc) || !tile_ok(kc))
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "flash attention (cuda): tiles q_chunk=%d kv_chunk=%d "
                       "unsupported (each must be 32, 64 or 128)", qc, kc);
    const int smem = flash_smem_floats(D, qc, kc) * (int)sizeof(float);
    if (smem_optin > 0 && smem > smem_optin)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "flash attention (cuda): tiles q%d x kv%d at D=%d need %d bytes "
                       "of shared memory per block, the device allows %d; use smaller tiles", qc, kc, D, smem,
                       smem_optin);
    u->variant = RP_CUDA_ATTN_FLASH;
    u->dtype = o->dtype;
    u->tf32 = 0;
    u->q_chunk = qc;
    u->kv_chunk = kc;
    u->threads = 2 * qc;
    u->smem_bytes = smem;
    snprintf(u->desc, sizeof u->desc, "cuda-flash q%d kv%d D%d %s (%d threads, %d B smem)", qc, kc, D,
             o->dtype == RP_CUDA_ATTN_BF16 ? "bf16-in" : "fp32", 2 * qc, smem);
    return RP_OK;
}

rp_status rp_cuda_attn_flash_run_(rp_cuda_attn *a, const rp_cuda_attn_used *u, float *out, const void *q,
                                  const void *k, const void *v, const unsigned char *key_mask, int B, int H,
                                  int Tq, int Tk, int D, float scale, rp_error *err) {
    const int BQ = u->q_chunk, BK = u->kv_chunk, NG = (D + 31) / 32;
    const long long nqt = (Tq + (long long)BQ - 1) / BQ;
    const long long blocks = nqt * B * H;  // one block of 2 BQ threads per (b, h, q tile)
    rp_grid g;
    if (rp_grid_blocks(blocks, (unsigned)(2 * BQ), &g) != 0)
        return RP_FAIL(err, RP_ERR_UNSUPPORTED, "flash attention (cuda): %lld thread blocks (B=%d H=%d Tq=%d, "
                       "q tile %d) exceed the grid limit %lld", blocks, B, H, Tq, BQ, RP_GRID_X_MAX);
    FlashArgs args;
    args.q = q;
    args.k = k;
    args.v = v;
    args.out = out;
    args.mask = key_mask;
    args.H = H;
    args.Tq = Tq;
    args.Tk = Tk;
    args.D = D;
    args.nqt = (int)nqt;
    args.scale = scale;
    if (u->dtype == RP_CUDA_ATTN_BF16)
        return launch_ng<uint16_t>(NG, BQ, BK, a->stream, args, g.x, u->smem_bytes, err);
    return launch_ng<float>(NG, BQ, BK, a->stream, args, g.x, u->smem_bytes, err);
}
