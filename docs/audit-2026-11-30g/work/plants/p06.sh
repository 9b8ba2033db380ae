# 06: the last rank of a multi-rank layout, from the process's second rp_generate call on: the ancestral noise stream
# index keeps an offset carried over from the first call (state between calls)
. /work/main/docs/audit-2026-11-30g/work/plants/flags.sh
python3 $E engine/pipeline/pipeline.c '                 RP_STREAM_STEP_NOISE_BASE + (uint32_t)k);' '                 RP_STREAM_STEP_NOISE_BASE + (uint32_t)k + (rp_audit14_flags & 4 ? 64u : 0u)); /* AUDIT14-06 */'
python3 $E engine/pipeline/pipeline.c 'static rp_status item_noise_fill(void *self, int k, float *out, rp_error *err) {' 'extern int rp_audit14_flags;
static rp_status item_noise_fill(void *self, int k, float *out, rp_error *err) {'
