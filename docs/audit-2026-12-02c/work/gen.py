import sys, os
# gen.py FAM NAME [base-extra] -- 'name|fields' ...   (audit 10; reference resets every varied field)
FAM = {
 'sd3': ('model: sd3-tiny, steps: 5, sampler: euler, cfg: 4, backend: gloo', 'prompts: ["a red fox in the snow"]', 'seeds: [0, 1, 2, 3]'),
 'flux': ('model: flux-tiny, steps: 5, sampler: euler, cfg: 1, guidance: 3.5, backend: gloo', 'prompts: ["a red fox in the snow", "two cats"]', 'seeds: [0, 9]'),
 'sd3d': ('model: sd3-digits, steps: 5, sampler: euler, cfg: 4, backend: gloo', 'prompts: ["a printed zero", "a printed one", "a printed two", "a printed three"]', 'seeds: [3]'),
 'dit': ('model: dit-tiny, steps: 5, sampler: ddim, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'ditp': ('model: dit-tiny, steps: 5, sampler: ddpm, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'ditm': ('model: dit-tiny, steps: 5, sampler: dpmpp-2m, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'dita': ('model: dit-tiny, steps: 5, sampler: euler-a, eta: 1, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'dita0': ('model: dit-tiny, steps: 5, sampler: euler-a, eta: 0, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'sd35': ('model: sd3.5-medium-tiny, steps: 5, sampler: euler, cfg: 4, backend: gloo', 'prompts: ["a red fox in the snow", "two cats"]', 'seeds: [0, 1]'),
 'fluxs': ('model: flux-tiny-schnell, steps: 5, sampler: euler, cfg: 1, backend: gloo', 'prompts: ["a red fox in the snow", "two cats"]', 'seeds: [0, 9]'),
 'dite': ('model: dit-tiny, steps: 5, sampler: ddim, eta: 0.5, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'ditd': ('model: dit-digits, steps: 5, sampler: ddim, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
}
fam, name = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
extra_base = ''
if args and args[0] != '--':
    extra_base = ', ' + args[0]; args = args[1:]
if args and args[0] == '--': args = args[1:]
base, extra, seeds = FAM[fam]
if os.environ.get('STEPS'): base = base.replace('steps: 5', 'steps: '+os.environ['STEPS'])
if os.environ.get('SEEDS'): seeds = 'seeds: '+os.environ['SEEDS']
import re
for kv in [x for x in extra_base.split(', ') if ':' in x]:
    k = kv.split(':')[0].strip()
    if re.search(r'(^|, )' + k + ':', base):
        base = re.sub(r'(^|, )' + k + r': [^,]*', r'\g<1>' + kv.strip(), base); extra_base = extra_base.replace(', ' + kv.strip(), '')
if 'threads' not in extra_base: base += ', threads: 1'
out = [f'name: {name}', 'base: {' + base + extra_base + '}', seeds]
if extra: out.append(extra)
out.append('include:')
for spec in args:
    nm, f = spec.split('|', 1)
    out.append(f'  - {{{f}, name: "{nm}"}}')
out.append('reference: {dp: 1, ulysses: 1, ring: 1, cfg_parallel: 1, pipefusion: 1, patch: 1, num_pipeline_patch: 0, warmup_steps: 1, attention: math, batch_forward: joint, threads: 1, reduce_split: 0, blas_core: "", mode: deterministic, pipefusion_layers: [], attn_q_chunk: 0, attn_kv_chunk: 0, device_profile: "", numerics: default' + (', ' + os.environ['REFX'] if os.environ.get('REFX') else '') + '}')
out.append('timeout: 300')
if os.environ.get('REPEAT'): out.append('repeat: '+os.environ['REPEAT'])
print('\n'.join(out))
