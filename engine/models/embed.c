/* embed.c — the conditioning embedders the families share (see embed.h). */
#include "embed.h"

#include "../device.h"
#include "../parallel/parallel.h"

void rp_silu_mlp(const rp_ctx *ctx, float *out, float *hid, const float *in, int B, const rp_linear_w *lin1,
                 const rp_linear_w *lin2) {
    rp_d_linear(ctx, hid, in, lin1, B);
    rp_d_silu(ctx, hid, hid, (size_t)B * lin1->out);
    rp_d_linear(ctx, out, hid, lin2, B);
}

void rp_timestep_embedder(const rp_ctx *ctx, float *out, float *hid, float *tfreq, const float *t, int B, int F,
                          const rp_linear_w *lin1, const rp_linear_w *lin2) {
    rp_d_timestep_embedding(ctx, tfreq, t, B, F, rp_par_max_period(ctx, 10000.0f), 0.0f);
    rp_silu_mlp(ctx, out, hid, tfreq, B, lin1, lin2);
    rp_par_weight_leak(ctx, lin2->bias); /* nothing unless that fault is injected */
}
