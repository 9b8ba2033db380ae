# case sets (audit 10's gen.py families, 5 steps, threads 1 unless said); a plant runs a subset under the same
# set / case names. Audit 17's three standard sets:
CS=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'cfg2|cfg_parallel: 2' )                                  # s: sd3
CT=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'cfg2|cfg_parallel: 2' 'dp2cfg2|dp: 2, cfg_parallel: 2' ) # t: dit
CF=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' )                                                         # f: flux
# this audit's (unusual configurations):
C3=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'cfg2|cfg_parallel: 2' )      # t3: dit at threads 3 (rows % 3 != 0); m: dit
                                                                 # dpmpp-2m; p: dit ddpm; e: dit ddim eta 0.5
CL=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' 'cfg2|cfg_parallel: 2' ) # l: sd3, one 46-byte prompt
PROMPTS_L='["a red fox in the snow under a pale winter moon"]'
CP=( 'pf2|pipefusion: 2, warmup_steps: 1' 'pf2w2|pipefusion: 2, warmup_steps: 2' 'pf1m2|pipefusion: 1, num_pipeline_patch: 2, warmup_steps: 1' ) # pf: dit
CD=( 'dp2|dp: 2' 'dp3|dp: 3' )                                   # d3: dit, 4 items, dp 3 (clean: CONFIG_ERROR)
# added after the first sweep (for 07b, 09, 10):
CSP=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'cfg2|cfg_parallel: 2' )     # sp: sd3, batch_forward per-item
CFP=( 'dp2|dp: 2' 'uly2|ulysses: 2' 'ring2|ring: 2' )            # fp: flux, batch_forward per-item
CPT=( 'patch2|patch: 2, warmup_steps: 1' 'patch4|patch: 4, warmup_steps: 1' ) # pt: dit, displaced patch
# added after the third sweep (for 11b against other arithmetic):
CFV=( 'dp2fl|dp: 2, attention: flash' 'uly2fl|ulysses: 2, attention: flash' 'dp2rs|dp: 2, reduce_split: 1' 'uly2sq|ulysses: 2, attention: subquad' ) # fv: flux
# added after the sixth sweep: a: dit euler-a eta 1 (C3's layouts); sh: dit with sharpen 8 (CT's layouts, clean only)
