# case sets of audit 23 (gen.py families, STEPS default 5 -> we pass STEPS=4; threads 1). Named <set>-<family> in tables.
# v: attention variants against the math reference (fl40: flash with a partial last key tile; fl32: control;
#    sp16 / sp40: split attention with query slices of 16 / 40 rows: the text encoder (32 tokens) is sliced at 16 only)
V=( 'fl40|attention: flash, attn_q_chunk: 64, attn_kv_chunk: 40' 'fl32|attention: flash, attn_q_chunk: 64, attn_kv_chunk: 32'
    'sp16|attention: split, attn_q_chunk: 16' 'sp40|attention: split, attn_q_chunk: 40' )
# s: exact layouts (cfg2 for dit / sd3 only)
S=( 'uly2|ulysses: 2' 'ring2|ring: 2' 'ring4|ring: 4' 'dp2|dp: 2' 'dp4|dp: 4' 'cfg2|cfg_parallel: 2' )
SF=( 'uly2|ulysses: 2' 'ring2|ring: 2' 'ring4|ring: 4' 'dp2|dp: 2' 'dp4|dp: 4' )
# f: FLUX approximate layouts; m4: num_pipeline_patch 4
F=( 'pf2|pipefusion: 2, warmup_steps: 1' 'pf2m4|pipefusion: 2, num_pipeline_patch: 4, warmup_steps: 1'
    'pf2dp2|pipefusion: 2, dp: 2, warmup_steps: 1' 'pf2m4dp2|pipefusion: 2, num_pipeline_patch: 4, dp: 2, warmup_steps: 1' )
# r: the split reduction asked by the case
R=( 'rs|reduce_split: 1' 'rsuly2|reduce_split: 1, ulysses: 2' 'rsdp2|reduce_split: 1, dp: 2' )
# b: seeds >= 2^32 (BIGSEEDS for dit / sd3, BIGSEEDS2 for flux's two seeds)
BIGSEEDS='[4294967296, 4294967297, 8589934593, 3]'; BIGSEEDS2='[4294967296, 9]'
B=( 'dp2|dp: 2' 'dp4|dp: 4' 'uly2|ulysses: 2' )
# added after plants 01-15 were swept (before 16-18 were swept):
# c: cfg parallel combinations (sd3; dit as control: its denoiser is not the planted one); uly2 control
C=( 'cfg2|cfg_parallel: 2' 'cfg2uly2|cfg_parallel: 2, ulysses: 2' 'cfg2dp2|cfg_parallel: 2, dp: 2' 'uly2|ulysses: 2' )
# g: FLUX approximate layouts with patch parallelism too
G=( 'pf2|pipefusion: 2, warmup_steps: 1' 'pf2m4|pipefusion: 2, num_pipeline_patch: 4, warmup_steps: 1'
    'pf2dp2|pipefusion: 2, dp: 2, warmup_steps: 1' 'patch2|patch: 2, warmup_steps: 1' )
