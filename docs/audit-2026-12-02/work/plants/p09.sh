# 09 step-noise-local-index: the ancestral / stochastic step noise of item b is drawn with the rank-local index b
# instead of the item's global_index, so dp groups > 0 draw group 0's streams (their own seeds). Every rank; acts
# under dp > 1 with a stochastic sampler (euler-a eta > 0, ddpm, ddim eta > 0). Runs in rp_generate; keyed by the
# data (global_index != b only on dp groups > 0), not the layout flags.
E=/work/main/docs/audit-2026-11-30d/work/plants/edit.py
python3 $E engine/pipeline/pipeline.c '        rp_randn(out + (size_t)b * n->per, n->per, n->items[b].seed, n->items[b].global_index,
                 RP_STREAM_STEP_NOISE_BASE + (uint32_t)k);' '        rp_randn(out + (size_t)b * n->per, n->per, n->items[b].seed, (uint64_t)b /* AUDIT21-09 */,
                 RP_STREAM_STEP_NOISE_BASE + (uint32_t)k);'
