# case sets (audit 10's gen.py families, 5 steps, threads 1, 4 items). Named <set>-<family> in tables.
# v: attention variants against the math reference (Tk: dit 64, sd3 / flux 96 joint tokens); 40 does not divide,
#    32 does (controls); one Ulysses case with flash
V=( 'fl40|attention: flash, attn_q_chunk: 64, attn_kv_chunk: 40' 'fl32|attention: flash, attn_q_chunk: 64, attn_kv_chunk: 32'
    'sq40|attention: subquad, attn_q_chunk: 40, attn_kv_chunk: 32' 'sq32|attention: subquad, attn_q_chunk: 32, attn_kv_chunk: 32'
    'sp40|attention: split, attn_q_chunk: 40' 'sp32|attention: split, attn_q_chunk: 32'
    'uly2fl40|ulysses: 2, attention: flash, attn_q_chunk: 64, attn_kv_chunk: 40' )
# s: exact layouts (cfg2 for dit / sd3 only)
S=( 'uly2|ulysses: 2' 'ring2|ring: 2' 'ring4|ring: 4' 'usp|ulysses: 2, ring: 2' 'dp2|dp: 2' 'dp4|dp: 4' 'cfg2|cfg_parallel: 2' )
SF=( 'uly2|ulysses: 2' 'ring2|ring: 2' 'ring4|ring: 4' 'usp|ulysses: 2, ring: 2' 'dp2|dp: 2' 'dp4|dp: 4' )
# f: FLUX approximate layouts
F=( 'pf2|pipefusion: 2, warmup_steps: 1' 'pf2w2|pipefusion: 2, warmup_steps: 2' 'pf2dp2|pipefusion: 2, dp: 2, warmup_steps: 1'
    'patch2|patch: 2, warmup_steps: 1' )
# m: dit with dpmpp-2m (family ditm); n: dit with euler-a eta 1 (dita) and ddpm (ditp)
M=( 't2|threads: 2' 'dp2|dp: 2' 'uly2|ulysses: 2' 'fl40|attention: flash, attn_q_chunk: 64, attn_kv_chunk: 40' )
N=( 'dp2|dp: 2' 'dp4|dp: 4' 'uly2|ulysses: 2' )
# t: thread counts (threads 2 in default and invariant numerics; inv1 a control); added after the first sweeps
T=( 't2|threads: 2' 'inv2|numerics: invariant, threads: 2' 'inv1|numerics: invariant' 'uly2t2|ulysses: 2, threads: 2' )
# r: sequence degrees 3 (added with plant 11; the clean build must refuse ring3 as CONFIG_ERROR / at load)
R=( 'ring3|ring: 3' 'ring2|ring: 2' )
