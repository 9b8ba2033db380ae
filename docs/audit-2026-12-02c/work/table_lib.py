import json, glob, os, re, subprocess
# table.py : one row per (plant, family, precision, case): verdict, first step/layer, summary, acted.
# audit 23: first step / layer from classification.json's evidence when present.
# table() is also audit 12's (../../audit-2026-11-30e/work/table.py), with its paths and acted rule.


def table(W, acted_py, clean_of, fam_field, acted_images, cut, header):
    """W: the work folder (r/P<NN>-<prec> results); acted_py: acted.py's path; clean_of(nn, prec): the clean
    build's results folder; fam_field: the family's index in the matrix folder's name split on '-' (maxsplit
    = fam_field); acted_images: an image difference counts as acted too; cut: summary length; header: the
    first-step column's title."""
    rows = []
    for pd in sorted(glob.glob(W + '/r/P*-*')):
        if not os.path.isdir(pd): continue
        nn, prec = os.path.basename(pd)[1:].split('-')
        acted = {}
        out = subprocess.run(['/usr/bin/python3', acted_py, pd, clean_of(nn, prec)], capture_output=True, text=True).stdout
        for l in out.splitlines():
            f = [x.strip() for x in l.split('|')]
            acted[(f[0], f[1])] = ('yes' if 'DIFFER' in f[2] or (acted_images and f[3] != 'images differ: -') else 'no')
        for md in sorted(glob.glob(pd + '/*/')):
            fam = os.path.basename(md.rstrip('/')).split('-', fam_field)[fam_field]
            for cd in sorted(glob.glob(md + '*/')):
                try: cj = json.load(open(cd + 'case.json'))
                except Exception: continue
                nm = cj.get('name') or 'REF'
                if nm == 'REF' or nm.startswith('ref'): continue
                try: c = json.load(open(cd + 'classification.json'))
                except Exception: c = {'verdict': '-', 'summary': 'no classification.json'}
                s = c.get('summary') or ''
                m = re.search(r'(step \d+)', s); where = m.group(1) if m else '-'
                ev = c.get('evidence') or {}  # audit 23: the evidence's first_step / first_layer when present
                if ev.get('first_step') is not None or ev.get('first_layer'):
                    where = f"step {ev.get('first_step')} / {ev.get('first_layer') or '-'}"
                rows.append((nn, fam, prec, nm, c.get('verdict'), where, s.replace('\n', ' ').replace('|', '/')[:cut],
                             acted.get((os.path.basename(md.rstrip('/')), nm), '?')))
    rows.sort(key=lambda r: (r[0], r[1], r[2] != 'fp32', r[3]))
    print(header)
    print('|---|---|---|---|---|---|---|---|')
    for r in rows: print('| ' + ' | '.join(map(str, r)) + ' |')


if __name__ == '__main__':
    W = '/tmp/audit11-work'
    table(W, W + '/acted.py', lambda nn, prec: W + ('/r/C2-' if nn.endswith('b') else '/r/C-') + prec, 1, False, 230,
          '| bug | family | prec | layout | verdict | first step / layer | evidence | acted |')
