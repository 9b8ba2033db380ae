/* text_encoder.h — a deterministic prompt encoder standing in for T5 + CLIP.
 *
 * SD3 and FLUX condition on two text outputs: per-token embeddings (T5-XXL's
 * last hidden state, (B, L, 4096)) and one pooled vector per prompt (CLIP's
 * projected EOS embedding, 2048 for SD3's two CLIPs concatenated, 768 for
 * FLUX's CLIP-L). This model produces both with the same shapes from a small
 * byte-level transformer, so the SD3/FLUX denoisers get text conditioning of
 * the real size without shipping multi-GB encoders. It is not meant to match
 * T5 or CLIP numerically; it is meant to be exact, cheap and reproducible.
 *
 * Tokenizer (fixed, no files): 0 = pad, 1 = bos, 2 = eos, 3 + b for each UTF-8
 * byte b of the prompt (vocab 259). Sequence = bos, bytes..., eos, then pads to
 * max_len. A prompt longer than max_len - 2 bytes is cut to its first
 * max_len - 2 bytes and the eos is kept (so a multi-byte character may be cut
 * in the middle: the tokenizer works on bytes, not characters). mask = 1 on
 * bos..eos, 0 on pads. The empty prompt "" (bos, eos, pads) is the
 * unconditional (CFG) input.
 *
 * Parameter names (all prefixed "text_encoder."), D = hidden, M = mlp_ratio * D:
 *   token_embedding.weight (vocab, D) · position_embedding.weight (max_len, D)
 *   layers.N.ln1.{weight, bias} (D) · layers.N.attn.qkv.{weight (3D, D), bias}
 *   layers.N.attn.proj.{weight (D, D), bias} · layers.N.ln2.{weight, bias}
 *   layers.N.mlp.fc1.{weight (M, D), bias} · layers.N.mlp.fc2.{weight (D, M), bias}
 *   final_ln.{weight, bias} · proj_context.{weight (context_dim, D), bias}
 *   proj_pooled.{weight (pooled_dim, D), bias}
 *
 * Forward (pre-LN, bidirectional like T5's encoder; padding handled by a key mask):
 *   x = token_embedding[tok] + position_embedding[0..L)
 *   x += attn(ln1(x)),  attn = qkv -> (B, L, 3, H, Dh), softmax(q k^T / sqrt(Dh) + keymask) v, proj
 *   x += fc2(gelu_tanh(fc1(ln2(x))))
 *   h = final_ln(x)
 *   context = proj_context(h) with padded positions set to 0        (B, L, context_dim)
 *   pooled  = proj_pooled(h at the eos position)                    (B, pooled_dim)
 * LayerNorms are affine with eps 1e-5 (torch default, as CLIP). */
#ifndef REPRO_TEXT_ENCODER_H
#define REPRO_TEXT_ENCODER_H

#include <stdint.h>

#include "../ctx.h"
#include "../error.h"
#include "../params.h"
#include "../safetensors.h"

#define RP_TE_PAD 0
#define RP_TE_BOS 1
#define RP_TE_EOS 2
#define RP_TE_BYTE0 3     /* token of byte b is RP_TE_BYTE0 + b */
#define RP_TE_VOCAB 259   /* 3 specials + 256 byte values */

typedef struct rp_te_config {
    char preset[32];
    int max_len;      /* L: tokens per prompt, bos and eos included */
    int vocab;        /* RP_TE_VOCAB */
    int hidden;       /* D */
    int depth;        /* transformer layers */
    int heads;        /* H; D % H == 0 */
    int mlp_ratio;    /* 4 */
    int context_dim;  /* per-token output width (T5-XXL: 4096) */
    int pooled_dim;   /* pooled output width (SD3: 2048, FLUX: 768) */
} rp_te_config;

/* Fills cfg for "te-tiny" (L 32, D 64, 2 layers, 2 heads, context 64, pooled 64), "te-digits"
 * (te-tiny's shape, shipped weights: the encoder of the trained sd3-digits),
 * "te-sd3" (L 77, D 256, 2 layers, 4 heads, context 4096, pooled 2048) or "te-flux"
 * (L 512, D 256, 2 layers, 4 heads, context 4096, pooled 768). Unknown name ->
 * RP_ERR_NOT_FOUND listing the known presets. */
rp_status rp_te_preset(const char *name, rp_te_config *cfg, rp_error *err);

/* Appends every parameter of cfg ("text_encoder." names, shapes, synthetic init
 * rules; see text_encoder.c) to l. */
void rp_te_param_specs(const rp_te_config *cfg, rp_param_list *l);

/* Byte-level tokenization of one prompt (see the header comment).
 *   prompt: NUL-terminated bytes (normally UTF-8; not validated); NULL = "".
 *   tokens (max_len) int32, mask (max_len) uint8 (mask may be NULL).
 * Returns the number of non-pad tokens n (2 <= n <= max_len); the eos is at n - 1.
 * max_len must be >= 2. Pure function of (prompt, max_len). */
int rp_te_tokenize(const char *prompt, int max_len, int32_t *tokens, uint8_t *mask);

typedef struct rp_te rp_te;

/* Loads weights by name from f (shape-checked), "text_encoder." names. */
rp_status rp_te_load(const rp_te_config *cfg, const rp_st_file *f, rp_te **out, rp_error *err);
void rp_te_free(rp_te *m);
const rp_te_config *rp_te_cfg(const rp_te *m);

/* Encodes B prompts (prompts[b] NULL = ""):
 *   out_context (B, L, context_dim)  per-token embeddings, rows of pad positions are 0
 *   out_mask    (B, L) uint8         1 = real token (bos..eos), 0 = pad; may be NULL
 *   out_pooled  (B, pooled_dim)      projection of the final hidden at eos; may be NULL
 * Pure fp32 arithmetic on fixed data: the same prompt under the same ctx gives
 * bitwise the same outputs on every call, whatever the batch size and the other
 * prompts in the batch (each prompt runs through its own GEMMs, so how a parallel
 * layout batches prompts cannot change their embeddings). ctx chooses precision, reduce_split
 * and the attention variant, as for the denoiser. No trace is recorded (the
 * encoder runs once per generation, outside the per-evaluation trace). */
rp_status rp_te_encode(const rp_te *m, const rp_ctx *ctx, const char *const *prompts, int B,
                       float *out_context, uint8_t *out_mask, float *out_pooled, rp_error *err);

/* Multiply-accumulates of one encode of one prompt (for GFLOP/s reporting). */
double rp_te_macs(const rp_te_config *cfg);

#endif
