/* attention.h — scaled dot-product attention as a swappable component.
 *
 * Every variant has the same contract, so models never know which one ran:
 *   q (B, H, Tq, D), k (B, H, Tk, D), v (B, H, Tk, D)  ->  out (B, H, Tq, D)
 *   out = softmax(scale * q k^T + mask) v
 * key_mask (B, Tk): nonzero = attend, 0 = masked out (text padding); NULL = all.
 * A query row whose keys are all masked gets zeros (not NaN).
 * Variants differ only in the order (and accumulator precision) of their
 * floating-point work; all GEMMs go through rp_gemm, so ctx->precision and
 * ctx->reduce_split act on every variant alike.
 *
 *   math     per (b, h): S = scale q k^T (one GEMM), mask, rp_softmax_rows
 *            (fp32 exp, double sum), out = P v (one GEMM)
 *   split    math over query slices of q_chunk rows (ComfyUI/Fooocus split
 *            attention); default q_chunk 1024
 *   subquad  Rabe & Staats sub-quadratic attention in the order of the
 *            sub_quadratic_attention.py that ComfyUI/diffusers/A1111 ship: per query
 *            chunk (q_chunk rows, default 1024), each key/value chunk (kv_chunk
 *            keys, default floor(sqrt(Tk))) is summarised alone (its max, exp(s -
 *            max) in fp32, their fp32 sum, exp-weighted values by GEMM); the chunks
 *            are then rescaled to the global max and summed in chunk order, and
 *            divided. kv_chunk >= Tk takes that code's fast path: plain softmax on
 *            the query chunk (the split order).
 *   flash    FlashAttention-2 forward: per query tile (q_chunk rows, default 128)
 *            a running max m, fp32 running sum l and unnormalised fp32 output O over
 *            key/value tiles (kv_chunk keys, default 128): m' = max(m, rowmax S),
 *            P = exp(S - m'), l = exp(m - m') l + rowsum P, O = exp(m - m') O + P v;
 *            out = O * (1 / l) once at the end.
 *   auto     one of the above chosen from ctx->device and the call's shapes
 *            (rp_attn_auto_choose); the choice goes to ctx->trace as notes
 *            "attention.auto" (variant), "attention.auto.backend", ".q_chunk",
 *            ".kv_chunk" and "attention.auto.reason". An unset ctx->device means
 *            this machine, read at each call (rp_device_profile_host).
 * Chunk sizes come from ctx->attn (0 = the default above).
 * With ctx->numerics == RP_NUMERICS_INVARIANT rp_attention runs the canonical
 * attention below instead (ctx->attn.kind must be math: the canonical order replaces
 * every variant's). */
#ifndef REPRO_ATTENTION_H
#define REPRO_ATTENTION_H

#include <stdint.h>

#include "../ctx.h"
#include "../error.h"

#define RP_ATTN_SPLIT_Q_DEFAULT 1024
#define RP_ATTN_SUBQUAD_Q_DEFAULT 1024
#define RP_ATTN_FLASH_Q_DEFAULT 128
#define RP_ATTN_FLASH_KV_DEFAULT 128

/* Dispatches on ctx->attn.kind. Errors: RP_ERR_INVALID for bad shapes, NULL
 * tensors, negative chunk sizes, or a chunk size the variant does not take
 * (math takes none, split only q_chunk); RP_ERR_NOMEM when scratch cannot be
 * allocated. */
rp_status rp_attention(const rp_ctx *ctx, float *out, const float *q, const float *k,
                       const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                       int Tk, int D, float scale, rp_error *err);

/* The variants, callable directly (tests, bench). Chunk sizes must be >= 1 here
 * (the 0 = default mapping is rp_attention's); a larger chunk than the sequence
 * is allowed and means one chunk. */
rp_status rp_attention_math(const rp_ctx *ctx, float *out, const float *q, const float *k,
                            const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                            int Tk, int D, float scale, rp_error *err);
rp_status rp_attention_split(const rp_ctx *ctx, float *out, const float *q, const float *k,
                             const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                             int Tk, int D, float scale, int q_chunk, rp_error *err);
rp_status rp_attention_subquad(const rp_ctx *ctx, float *out, const float *q, const float *k,
                               const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                               int Tk, int D, float scale, int q_chunk, int kv_chunk,
                               rp_error *err);
rp_status rp_attention_flash(const rp_ctx *ctx, float *out, const float *q, const float *k,
                             const float *v, const uint8_t *key_mask, int B, int H, int Tq,
                             int Tk, int D, float scale, int q_chunk, int kv_chunk,
                             rp_error *err);

/* ---- the canonical (layout-invariant) attention: canonical.c ----------------------
 *
 * The contract every layout must reproduce bit for bit (ctx->numerics invariant).
 * For one (b, h) the keys, in the single process's order, are cut into SEGMENTS by
 * the caller (FLUX: [text | image], SD3: [image | text], DiT, the text encoder, the
 * VAE: one). A segment of n keys is cut into canonical blocks of
 *   Bk(n) = max(1, min(64, 2^v2(n) / 8))   (v2: exponent of the largest power of 2
 *                                           dividing n; integer division)
 * keys: Bk(n) divides n / R for every ring degree R in 1..8 that divides n, so no
 * block straddles two ring ranks' shards. A segment no layout splits (SD3's text, which
 * every sequence-parallel rank holds whole) is cut instead into blocks of 64 keys from its
 * start, the last one shorter (an odd length would otherwise give Bk = 1: a partial per
 * key). For a query row q and one block:
 *   s_j  = scale * dot(q, k_j), dot = fmaf(q[d], k_j[d], acc) over d = 0 .. D-1 from
 *          acc = 0 (one rounding a step), then one fp32 multiply by scale; a masked
 *          key's s_j = -Inf
 *   m_b  = max_j s_j (exact; -Inf when every key of the block is masked)
 *   p_j  = rp_expf(s_j - m_b) (fp32)
 *   l_b  = sum_j p_j in fp32, in rp_attn_exp_sum's fixed order (8 lanes, lane t summing
 *          j = t mod 8 in key order, then ((0+1)+(2+3))+((4+5)+(6+7)))
 *   O_b[d] = fmaf(p_j, v_j[d], acc) over j in key order from acc = 0
 *   an all-masked block: m_b = -Inf, l_b = 0, O_b = 0.
 * The blocks of a row then fold in canonical order (segment 0's blocks in key order,
 * then segment 1's, ...): the first initialises (m, l, O) = (m_b, l_b, O_b); each
 * further one, in fp32 (mul, mul, add: no fused steps):
 *   m' = max(m, m_b); a = rp_expf(m - m'), c = rp_expf(m_b - m');
 *   l = a l + c l_b; O = a O + c O_b; m = m'        (m' = -Inf: nothing to add)
 * and out = O / l (fp32 division; l == 0, every key masked: zeros).
 * Every value depends only on the query row and the keys of its block, and the fold
 * order is fixed: any split of the query rows, of the batch or of the heads, and any
 * arrival order of the key blocks give the same bits, as long as each block's partial
 * is stored at its canonical index and the fold runs at the end (the ring does this).
 * Precision bf16 rounds the inputs of the two products as rp_gemm rounds a GEMM's (round
 * to nearest even, rp_f32_to_bf16): q and k before the dots, p_j and v before the O_b
 * sums (l_b sums the unrounded p_j); accumulation stays fp32. reduce_split has no GEMM to
 * act on here and is refused (rp_attn_canon_check). The bits do not depend on the ISA
 * (fmaf is correctly rounded; RP_SIMD_CLONES, no contraction; tests/isa compares). */

/* Bk(n) above; n <= 0 gives 1. */
int rp_attn_canon_block(int n);

/* The block length of a segment no layout splits: 64 (its last block shorter). */
int rp_attn_canon_block_whole(void);

/* The canonical blocks of a segment of n keys: n / bk when split-able (bk = Bk(n)), else
 * ceil(n / 64). */
int rp_attn_canon_nblocks(int n, int whole);

/* kt (nk, D) = the keys k (nk, D) in chunks of 64 keys (the last one shorter), each
 * transposed to (D, width): the layout rp_attn_canon_partials reads for a run of keys
 * packed from its start; bf16: rounded to bf16 values. */
void rp_attn_canon_pack(float *kt, const float *k, int nk, int D, int bf16);

/* The partials of nq query rows q (nq, D) against a run of nk keys that starts at a block
 * boundary of its segment (nk a multiple of bk, the segment's Bk; or, for a segment no
 * layout splits, bk = 64 and the whole segment, its last block shorter): kt (the run's keys,
 * rp_attn_canon_pack'ed), v (nk, D), mask (nk; nonzero = attend) or NULL. Block i of the run is
 * written to slot i0 + i of each row r: pm[r nb + i0 + i] (m_b), pl[...] (l_b),
 * pO[(r nb + i0 + i) D ..] (O_b) — nb slots a row, the row's blocks in canonical order.
 * bf16 (precision bf16): p_j is rounded to bf16 for the O_b sums; q, kt and v must hold
 * bf16 values already (rp_bf16_round of ops.h, rp_attn_canon_pack). */
void rp_attn_canon_partials(float *pm, float *pl, float *pO, int nb, int i0, const float *q, const float *kt,
                            const float *v, const uint8_t *mask, int nq, int nk, int bk, int D, float scale,
                            int bf16);

/* out (nq, D) = the fold of each row's nb slots (layout as rp_attn_canon_partials) in
 * slot order, divided by l. no_rescale: the injected fault ring-no-rescale — the fold
 * adds l += l_b, O += O_b with no max correction. */
void rp_attn_canon_merge(float *out, const float *pm, const float *pl, const float *pO, int nq, int nb, int D,
                         int no_rescale);

/* Query rows a pass for nb blocks a row (<= 128, slots within 2^20 floats, >= 4): how many
 * rows' partials a caller of rp_attn_canon_partials holds at once before folding them
 * (the ring's replicated-segment tiles; any count gives the same bits). */
int rp_attn_canon_pass_rows(int nb, int D);

/* Threads for a canonical call over `pairs` independent (batch, head) pairs of `work`
 * multiply-adds in all: ctx->threads (at most pairs), or 1 for a call too small to share
 * (under 2^21: a thread's start would cost more than its part). Any count gives the same
 * bits: a pair is the same code over the same inputs on whichever thread. */
int rp_attn_canon_threads(const rp_ctx *ctx, int pairs, double work);

/* Whether ctx may run the canonical attention: RP_ERR_INVALID naming the setting when
 * ctx->attn.kind is not math (its order would be ignored) or reduce_split is set (the
 * canonical order has no GEMM for it to act on). */
rp_status rp_attn_canon_check(const rp_ctx *ctx, rp_error *err);

/* The canonical attention of q (B, H, Tq, D), k, v (B, H, Tk, D), key_mask (B, Tk) or
 * NULL -> out (B, H, Tq, D). seg (nseg) the segment lengths, summing to Tk (zeros
 * allowed); segments nsplit .. nseg-1 are ones no layout splits (blocks of 64); seg NULL:
 * one (split-able) segment of Tk. Errors: rp_attn_canon_check's, bad shapes or segments
 * (RP_ERR_INVALID), RP_ERR_NOMEM. */
rp_status rp_attention_canonical(const rp_ctx *ctx, float *out, const float *q, const float *k, const float *v,
                                 const uint8_t *key_mask, int B, int H, int Tq, int Tk, int D, float scale,
                                 const int *seg, int nseg, int nsplit, rp_error *err);

/* What auto picked for one call. kind is never RP_ATTN_AUTO; the chunk sizes are
 * explicit (>= 1) for the variants that take them, 0 otherwise. */
typedef struct rp_attn_choice {
    rp_attn_kind kind;
    int q_chunk, kv_chunk;
    char backend[24];   /* the framework path it emulates, e.g. "sdpa-mem-efficient" */
    char reason[640];
} rp_attn_choice;

/* The auto selector (auto.c): the dispatch logic of PyTorch 2.x SDPA and of
 * ComfyUI/Fooocus's attention, evaluated on profile p instead of a GPU. The
 * frameworks run half precision, so dtype never rules flash out here.
 *   p->sdpa = 1 (PyTorch SDPA: the first backend whose constraints hold):
 *     flash          simd >= AVX-512 (~ SM >= 80), D % 8 == 0, D <= p->flash_max_head_dim,
 *                    and no key mask (the flash kernel takes no attn_mask). Tiles: PyTorch's
 *                    CPU flash kernel's rule, q 32 / 64 / 256 for Tq < 192 / < 768 / >= 768,
 *                    kv 512.
 *     mem-efficient  simd >= AVX2 (~ SM >= 50), D % 4 == 0 (fp32 alignment); masks allowed.
 *                    The cutlass kernel behind it rescales a running max/sum per key tile,
 *                    i.e. the flash order, with its own tiles: 64 queries x 64 keys for
 *                    D <= 64, 32 x 128 above. So: flash with those tiles.
 *     math           otherwise.
 *   p->sdpa = 0 (ComfyUI/Fooocus's own attention; bytes are fp32, attention upcast):
 *     split (p->split = 1): needs B*H*Tq*Tk*4*3 bytes; steps = 1, or the power of two
 *                    2^ceil(log2(need / mem_free)); slices of Tq / steps rows when steps
 *                    divides Tq, else of Tq rows (ComfyUI's rule). steps > 64 (ComfyUI
 *                    raises out-of-memory): sub-quadratic instead.
 *     subquad        the first q chunk x in 4096, 2048, 1024, 512, 256 with
 *                    mem_free / (B*H*4*x*4) >= Tk, kv chunk = Tk (no key chunking); none
 *                    fits: q 512, kv floor(sqrt(Tk)).
 * out->backend names the path ("sdpa-flash", "sdpa-mem-efficient", "sdpa-math",
 * "comfy-split", "comfy-subquad"). A nonzero override->q_chunk / kv_chunk replaces the
 * picked size where the chosen variant takes one (said in the reason).
 * Errors: RP_ERR_INVALID for a profile without memory or bad shapes. */
rp_status rp_attn_auto_choose(const rp_device_profile *p, const rp_attn_cfg *override, int B, int H,
                              int Tq, int Tk, int D, int masked, rp_attn_choice *out, rp_error *err);

/* The profile auto decides from: ctx->device, or, when unset, this machine read now (the
 * CLIs resolve it once). */
rp_device_profile rp_attn_profile_of(const rp_ctx *ctx);

/* Records auto's choice c for a call of shape (B, H, Tq, Tk, D) in t (NULL: nothing), the
 * one record every device's auto writes, so a trace says what ran wherever the attention
 * ran (the CPU selector above; a GPU device's own SDPA rules, engine/cuda/device_cuda.c).
 * The run's first choice goes under "attention.auto*"; a later call whose choice differs
 * adds "attention.auto.mixed" = "yes" and "attention.auto.<B>x<H>x<Tq>x<Tk>x<D>" =
 * "<variant> <backend> q=.. kv=..", once per shape, so the notes stay bounded by the shapes,
 * not the calls. */
void rp_attn_note_choice(struct rp_trace *t, const rp_attn_choice *c, int B, int H, int Tq, int Tk, int D);

/* Notes in t (NULL: nothing) that variant `kind` ran with these chunk sizes, as
 * "attention.ran.<kind>" = "q=<q_chunk> kv=<kv_chunk>" (0: the variant has no such size),
 * once per distinct value. Each variant's own entry point calls it, and the device dispatcher
 * for the kernel a device reports: the trace then says which kernels computed the case, for
 * the classifier to hold against the variant the case asked for (a silent fallback to
 * another kernel would otherwise compare as that variant's rounding). */
void rp_attn_note_ran(struct rp_trace *t, const char *kind, int q_chunk, int kv_chunk);

/* Parses "math" | "split" | "subquad" | "flash" | "auto"; RP_ERR_INVALID otherwise. */
rp_status rp_attn_kind_parse(const char *s, rp_attn_kind *out, rp_error *err);

#endif
