import sys, os
# gen.py FAMILY NAME [base-extra] -- 'name|fields' ...   fields is yaml flow content w/o braces
FAM = {
 'sd3': ('model: sd3-tiny, steps: 5, sampler: euler, cfg: 4, backend: gloo', 'prompts: ["a red fox in the snow"]', 'seeds: [0, 1, 2, 3]'),
 'sd3b': ('model: sd3-tiny, steps: 5, sampler: euler, cfg: 4, backend: gloo', 'prompts: ["a red fox in the snow", "a blue car on a long empty road at night", "two cats", "an old lighthouse by the sea under a stormy sky with gulls"]', 'seeds: [5]'),
 'flux': ('model: flux-tiny, steps: 5, sampler: euler, cfg: 1, guidance: 3.5, backend: gloo', 'prompts: ["a red fox in the snow", "two cats"]', 'seeds: [0, 9]'),
 'sd3d': ('model: sd3-digits, steps: 5, sampler: euler, cfg: 4, backend: gloo', 'prompts: ["a printed zero", "a printed one", "a printed two", "a printed three"]', 'seeds: [3]'),
 'dit': ('model: dit-tiny, steps: 5, sampler: ddim, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'ditc': ('model: dit-tiny, steps: 5, sampler: ddim, cfg: 4, backend: gloo', 'classes: [1, 207]', 'seeds: [4, 11]'),
 'ditp': ('model: dit-tiny, steps: 5, sampler: ddpm, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'dita': ('model: dit-tiny, steps: 5, sampler: euler-a, eta: 1, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'ditdp': ('model: dit-digits, steps: 5, sampler: ddpm, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
 'ditd': ('model: dit-digits, steps: 5, sampler: ddim, cfg: 4, backend: gloo', '', 'seeds: [0, 1, 2, 3]'),
}
fam, name = sys.argv[1], sys.argv[2]
args = sys.argv[3:]
extra_base = ''
if args and args[0] != '--':
    extra_base = ', ' + args[0]; args = args[1:]
if args and args[0] == '--': args = args[1:]
base, extra, seeds = FAM[fam]
if 'threads' not in extra_base: base += ', threads: 1'
out = [f'name: {name}', '{'.join(['base: ', base + extra_base + '}']), seeds]
if extra: out.append(extra)
out.append('include:')
for spec in args:
    nm, f = spec.split('|', 1)
    out.append(f'  - {{{f}, name: "{nm}"}}')
out.append('reference: {dp: 1, ulysses: 1, ring: 1, cfg_parallel: 1, pipefusion: 1, patch: 1, num_pipeline_patch: 0, warmup_steps: 1, attention: math, batch_forward: joint' + (', ' + os.environ['REFX'] if os.environ.get('REFX') else '') + '}')
out.append('timeout: 120')
import os
if os.environ.get('REPEAT'): out.append('repeat: '+os.environ['REPEAT'])
print('\n'.join(out))
