import sys
# specs.py SET [precs] -> prints specs lines for run.sh
L = {
 'pf2n4': 'pipefusion: 2, num_pipeline_patch: 4, warmup_steps: 2',
 'pf2n8': 'pipefusion: 2, num_pipeline_patch: 8, warmup_steps: 2',
 'pf4': 'pipefusion: 4, warmup_steps: 2',
 'pf4n8': 'pipefusion: 4, num_pipeline_patch: 8, warmup_steps: 2',
 'pf2uly2': 'pipefusion: 2, ulysses: 2, warmup_steps: 2',
 'pf2ring2': 'pipefusion: 2, ring: 2, warmup_steps: 2',
 'pf2n4uly2': 'pipefusion: 2, ulysses: 2, num_pipeline_patch: 4, warmup_steps: 2',
 'patch2cfg2': 'patch: 2, cfg_parallel: 2, warmup_steps: 2',
 'patch4cfg2': 'patch: 4, cfg_parallel: 2, warmup_steps: 2',
 'patch4': 'patch: 4, warmup_steps: 2',
 'patch2dp2': 'patch: 2, dp: 2, warmup_steps: 2',
 'pf2dp2': 'pipefusion: 2, dp: 2, warmup_steps: 2',
 'pf2cfg2': 'pipefusion: 2, cfg_parallel: 2, warmup_steps: 2',
 'patch2': 'patch: 2, warmup_steps: 2',
 'pf2': 'pipefusion: 2, warmup_steps: 2',
 'dp2': 'dp: 2',
 'uly2': 'ulysses: 2',
 'ring2': 'ring: 2',
 'cfg2': 'cfg_parallel: 2',
 'pf2dp2cfg2': 'pipefusion: 2, dp: 2, cfg_parallel: 2, warmup_steps: 2',
}
for w in range(0, 6):
    L[f'patch2w{w}'] = f'patch: 2, warmup_steps: {w}'
    L[f'pf2w{w}'] = f'pipefusion: 2, warmup_steps: {w}'
    L[f'pf2n4w{w}'] = f'pipefusion: 2, num_pipeline_patch: 4, warmup_steps: {w}'
    L[f'patch4w{w}'] = f'patch: 4, warmup_steps: {w}'
sets = sys.argv[1].split(',')
precs = sys.argv[2].split(',') if len(sys.argv) > 2 else ['fp32', 'bf16']
extra = sys.argv[3] if len(sys.argv) > 3 else ''
sfx = sys.argv[4] if len(sys.argv) > 4 else ''
for s in sets:
    for p in precs:
        f = L[s] + f', precision: {p}' + (', ' + extra if extra else '')
        print(f"{s}{sfx} {p}|{f}")
