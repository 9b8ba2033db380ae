import json, glob, collections
# cleancount.py : verdicts of every clean case run (r/C-<prec>), by precision and set; a false alarm = any verdict other
# than drift / identical / approx
W = '/work/audit23-work/r'
tot = collections.Counter(); fa = []
for pd in sorted(glob.glob(W + '/C-*/')):
    prec = pd.rstrip('/').split('-')[-1]
    for cd in glob.glob(pd + '*/*/'):
        try: cj = json.load(open(cd + 'case.json')); c = json.load(open(cd + 'classification.json'))
        except Exception: continue
        nm = cj.get('name') or 'REF'
        if nm == 'REF' or nm.startswith('ref'): continue
        tot[(prec, c['verdict'])] += 1
        if c['verdict'] not in ('drift', 'identical', 'approx'): fa.append((prec, cd.split('/')[-3], nm, c['verdict'], c['summary'][:200]))
for k, v in sorted(tot.items()): print(k, v)
print('clean case runs:', sum(tot.values()), 'false alarms:', len(fa))
for f in fa: print('  FALSE ALARM', f)
