import json, glob, os, sys
# cmp_clean.py : for every plant case run, its verdict and summary beside the clean build's same case (r/C-<prec>);
# prints the plant case runs whose verdict or summary differ from the clean one's
W = '/work/audit23-work/r'
def idx(d):
    out = {}
    for cd in glob.glob(d + '/*/*/'):
        try: cj = json.load(open(cd + 'case.json')); c = json.load(open(cd + 'classification.json'))
        except Exception: continue
        out[(cd.split('/')[-3], cj.get('name'))] = (c['verdict'], c['summary'])
    return out
for pd in sorted(glob.glob(W + '/P*-*')):
    if not os.path.isdir(pd): continue
    nn, prec = os.path.basename(pd)[1:].split('-')
    P, C = idx(pd), idx(W + '/C-' + prec)
    same = diff = 0
    for k, v in sorted(P.items()):
        if k[1] is None or k[1].startswith('ref'): continue
        if C.get(k) == v: same += 1
        else:
            diff += 1
            if '-v' in sys.argv: print(nn, prec, k, v[0], '<- clean', C.get(k, ('?',))[0])
    print(f'P{nn}-{prec}: {same} case runs the clean verdict and summary exactly, {diff} not')
