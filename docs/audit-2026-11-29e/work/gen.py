import sys
# gen.py FAMILY NAME case-spec...   case-spec = layout[:prec,prec]
FAM = {
 'sd3': ('{model: sd3-tiny, steps: 6, sampler: euler, cfg: 4, threads: 1, backend: gloo}', 'prompts: ["a red fox in the snow"]', 'seeds: [0, 1, 2, 3]'),
 'flux': ('{model: flux-tiny, steps: 6, sampler: euler, cfg: 1, guidance: 3.5, threads: 1, backend: gloo}', 'prompts: ["a red fox in the snow"]', 'seeds: [0, 1, 2, 3]'),
 'sd3b': ('{model: sd3-tiny, steps: 6, sampler: euler, cfg: 4, threads: 1, backend: gloo}', 'prompts: ["a red fox in the snow", "a blue car on a long empty road at night", "two cats", "an old lighthouse by the sea under a stormy sky with gulls"]', 'seeds: [0]'),
 'sd3m': ('{model: sd3-tiny, steps: 6, sampler: euler, cfg: 4, threads: 1, backend: gloo}', 'prompts: ["a red fox in the snow", "an old lighthouse by the sea under a stormy sky with gulls"]', 'seeds: [0, 7]'),
 'sd3d': ('{model: sd3-digits, steps: 6, sampler: euler, cfg: 4, threads: 1, backend: gloo}', 'prompts: ["a printed zero", "a printed one", "a printed two", "a printed three"]', 'seeds: [0]'),
 'dit': ('{model: dit-tiny, steps: 6, sampler: ddim, cfg: 4, threads: 1, backend: gloo}', '', 'seeds: [0, 1, 2, 3]'),
 'ditd': ('{model: dit-digits, steps: 6, sampler: ddim, cfg: 4, threads: 1, backend: gloo}', '', 'seeds: [0, 1, 2, 3]'),
}
LAY = {
 'dp2': 'dp: 2', 'ring2': 'ring: 2', 'pf2': 'pipefusion: 2, warmup_steps: 3', 'patch2': 'patch: 2, warmup_steps: 3',
 'dp2cfg2': 'dp: 2, cfg_parallel: 2', 'cfg2': 'cfg_parallel: 2', 'uly2': 'ulysses: 2', 'usp': 'ulysses: 2, ring: 2',
 'dp2-ddpm': 'dp: 2, sampler: ddpm', 'dp2-eulera': 'dp: 2, sampler: euler-a, eta: 1', 'dp2-dpmpp': 'dp: 2, sampler: dpmpp-2m',
 'patch2-pi': 'patch: 2, warmup_steps: 3, batch_forward: per-item', 'pf2-pi': 'pipefusion: 2, warmup_steps: 3, batch_forward: per-item', 'dp2-pi': 'dp: 2, batch_forward: per-item',
 'patch2w0': 'patch: 2, warmup_steps: 0', 'pf2w0': 'pipefusion: 2, warmup_steps: 0', 'patch2w1': 'patch: 2, warmup_steps: 1',
 'dp2-flash16': 'dp: 2, attention: flash, attn_q_chunk: 32, attn_kv_chunk: 16',
}
fam, name = sys.argv[1], sys.argv[2]
base, extra, seeds = FAM[fam]
out = [f'name: {name}', f'base: {base}', seeds]
if extra: out.append(extra)
out.append('include:')
for spec in sys.argv[3:]:
    lay, *p = spec.split(':')
    for prec in (p[0].split(',') if p else ['fp32', 'bf16']):
        out.append(f'  - {{{LAY[lay]}, precision: {prec}, name: "{lay} {prec}"}}')
out.append('reference: {dp: 1, ulysses: 1, ring: 1, cfg_parallel: 1, pipefusion: 1, patch: 1, warmup_steps: 1, attention: math}')
out.append('timeout: 120')
print('\n'.join(out))
