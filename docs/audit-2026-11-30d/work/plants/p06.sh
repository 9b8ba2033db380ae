# 06: the text encoder on the last rank runs at the other precision (fp32 <-> bf16)
E=/tmp/audit11-work/plants/edit.py
python3 $E engine/models/text_encoder.c 'static rp_status encode_one(const rp_te *m, const rp_ctx *ctx, const char *prompt, const te_scratch *w,
                            float *ctx_out, uint8_t *mask_out, float *pooled_out, rp_error *err) {' 'static rp_status encode_one(const rp_te *m, const rp_ctx *ctx0, const char *prompt, const te_scratch *w,
                            float *ctx_out, uint8_t *mask_out, float *pooled_out, rp_error *err) {
    rp_ctx c11 = *ctx0; /* AUDIT11-06 */
    if (ctx0->par && ctx0->par->world > 1 && ctx0->par->rank == ctx0->par->world - 1)
        c11.precision = ctx0->precision == RP_PREC_BF16 ? RP_PREC_FP32 : RP_PREC_BF16;
    const rp_ctx *ctx = &c11;'
