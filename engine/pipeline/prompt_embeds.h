/* prompt_embeds.h — precomputed text conditioning for SD3 / FLUX, as a safetensors file.
 *
 * repro's text encoders are synthetic, so a real checkpoint gets real conditioning only
 * from outside: the tensors diffusers' pipeline.encode_prompt returns, saved as they are
 * (any float dtype; F32 keeps them bit for bit):
 *   prompt_embeds                   (R, L, Dctx)  per-token states, one row per prompt
 *   pooled_prompt_embeds            (R, Dpool)    pooled vector, one row per prompt
 *   negative_prompt_embeds          (1, L, Dctx)  SD3 with cfg > 1: the negative prompt's
 *   negative_pooled_prompt_embeds   (1, Dpool)    (diffusers' default negative is "")
 * Item b of a request uses row embed_row (generate: the b-th item; a matrix case: the
 * item's position in the case). L is the file's: SD3's pipeline gives 77 + 256 = 333
 * tokens (max_sequence_length 256), FLUX-dev 512, FLUX-schnell 256. Dctx and Dpool must
 * be the model's (SD3 4096 / 2048, FLUX 4096 / 768).
 * In diffusers:  pe, npe, pp, npp = pipe.encode_prompt(prompts, prompts, prompts)  (SD3;
 * FLUX returns pe, pp, text_ids) and safetensors.torch.save_file({...}, "embeds.safetensors"). */
#ifndef REPRO_PROMPT_EMBEDS_H
#define REPRO_PROMPT_EMBEDS_H

#include "error.h"

typedef struct rp_prompt_embeds {
    int R, L, Dctx, Dpool;
    float *context;      /* (R, L, Dctx) */
    float *pooled;       /* (R, Dpool) */
    float *neg_context;  /* (L, Dctx) or NULL when the file has none */
    float *neg_pooled;   /* (Dpool) or NULL */
} rp_prompt_embeds;

/* Reads path, checking every shape against (Dctx, Dpool) and the negative pair's L;
 * errors name the file, the tensor and the rule. */
rp_status rp_prompt_embeds_read(const char *path, int Dctx, int Dpool, rp_prompt_embeds *out, rp_error *err);
void rp_prompt_embeds_free(rp_prompt_embeds *e);

/* Writes R rows (and the negative pair when neg_context is not NULL) to path (F32, atomic):
 * the file rp_prompt_embeds_read reads back bit for bit. */
rp_status rp_prompt_embeds_write(const char *path, int R, int L, int Dctx, int Dpool, const float *context,
                                 const float *pooled, const float *neg_context, const float *neg_pooled,
                                 rp_error *err);

#endif
