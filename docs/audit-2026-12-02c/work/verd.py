import json, glob, sys, os
# verd.py RUNDIR... : one line per case: set, name, verdict, pass, largest ratio, summary (cut)
for d in sys.argv[1:]:
    for cd in sorted(glob.glob(d + '/*/*/')):
        try: cj = json.load(open(cd + 'case.json')); c = json.load(open(cd + 'classification.json'))
        except Exception as e:
            if os.path.exists(cd + 'case.json'): print(cd, 'NO CLASSIFICATION', e)
            continue
        nm = cj.get('name') or 'REF'
        if nm == 'REF': continue
        print(f"{os.path.basename(d.rstrip('/'))} | {cd.split('/')[-3]} | {nm} | {c['verdict']} | pass={c['pass']} | r={c.get('largest_ratio', float('nan')):.3g} | {c['summary'][:int(os.environ.get('W', 230))]}")
