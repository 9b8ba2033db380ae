import json, glob, os, subprocess, collections
# grade.py : every acting plant case run (acted2.py against the clean build's same case; 05: every case, its reference
# being the plant's) graded against work/expected.txt's criterion: right (class, first step and place), wrong cause
# (a failing class at the wrong step or place / cause), escape (identical / drift / approx). Prints per plant x precision.
W = '/work/audit23-work'
HERE = os.path.dirname(os.path.abspath(__file__))
# plant: (class, first step, place test on (first_step.what, first_layer.name, summary))
EXP = {
 '01': ('BUG', 0, lambda w, l, s: w == 'attention kernel'),
 '04': ('BUG', 0, lambda w, l, s: w == 'initial noise'),
 '05': ('CONFIG_ERROR', None, lambda w, l, s: "field 'precision'" in s),
 '08': ('BUG', 0, lambda w, l, s: w == 'teacher input'),
 '08b': ('BUG', 2, lambda w, l, s: w == 'teacher input'),
 '09': ('BUG', 4, lambda w, l, s: l == 'vae.decode'),
 '10': ('BUG', 4, lambda w, l, s: l == 'vae.decode'),
 '11': ('BUG', 0, lambda w, l, s: l == 'text_encoder'),
 '12': ('BUG', None, lambda w, l, s: 'num_pipeline_patch' in s or w in ('configuration', 'emulation')),
 '13': ('BUG', 0, lambda w, l, s: 'sampler' in (l or '') or 'schedule' in s or 'timestep' in (l or '')),
 '14': ('BUG', 0, lambda w, l, s: l in ('x_embedder', 'pos_embed') and 'GEMM' in s),
 '15': ('BUG', 0, lambda w, l, s: l == 'pos_embed' and 'RoPE' in s),
 '16': ('BUG', 3, lambda w, l, s: 'guidance' in (l or '') or 'guided' in s or 'cfg' in s),
 '17': ('BUG', 0, lambda w, l, s: l == 'text_encoder'),
 '18': ('BUG', 1, lambda w, l, s: True),
}
cnt = collections.defaultdict(collections.Counter); lines = []
for pd in sorted(glob.glob(W + '/r/P*-*')):
    if not os.path.isdir(pd): continue
    nn, prec = os.path.basename(pd)[1:].split('-')
    out = subprocess.run(['/usr/bin/python3', HERE + '/acted2.py', pd, W + '/r/C-' + prec], capture_output=True, text=True).stdout
    acted = {}
    for l in out.splitlines():
        f = [x.strip() for x in l.split('|')]
        acted[(f[0], f[1])] = 'DIFFER' in f[2] or f[3] != 'images differ: -'
    for cd in sorted(glob.glob(pd + '/*/*/')):
        try: cj = json.load(open(cd + 'case.json')); c = json.load(open(cd + 'classification.json'))
        except Exception: continue
        nm = cj.get('name') or 'REF'
        if nm == 'REF' or nm.startswith('ref'): continue
        st = cd.split('/')[-3]
        if not (acted.get((st, nm)) or nn == '05'): cnt[(nn, prec)]['not acting'] += 1; continue
        v, e, s = c['verdict'], c.get('evidence') or {}, c.get('summary') or ''
        fs = e.get('first_step') or {}; fl = e.get('first_layer') or {}
        cls, step, place = EXP[nn]
        if v in ('identical', 'drift', 'approx'): g = 'escape'
        elif v == cls and (step is None or fs.get('step') == step) and place(fs.get('what'), fl.get('name'), s): g = 'right'
        else: g = 'wrong cause'
        cnt[(nn, prec)][g] += 1
        lines.append(f"{nn} | {prec} | {st[4:]} | {nm} | {v} | {fs.get('step')} {fs.get('what') or ''} | {fl.get('name') or '-'} | {g}")
print('| plant | prec | set-family | case | verdict | first step / what | first layer | grade |')
print('|---|---|---|---|---|---|---|---|')
for l in lines: print('| ' + l + ' |')
print()
tot = collections.Counter()
print('| plant | prec | acting | right | wrong cause | escape | not acting |'); print('|---|---|---|---|---|---|---|')
for k in sorted(cnt):
    c = cnt[k]; a = c['right'] + c['wrong cause'] + c['escape']; tot.update(c); tot['acting'] += a
    print(f"| {k[0]} | {k[1]} | {a} | {c['right']} | {c['wrong cause']} | {c['escape']} | {c['not acting']} |")
print(f"| all | | {tot['acting']} | {tot['right']} | {tot['wrong cause']} | {tot['escape']} | {tot['not acting']} |")
