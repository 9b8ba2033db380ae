import json, sys, glob
# ratios.py RESDIR... : verdict, precision, floor, largest_ratio, top layer (ratio rel envelope), fp32-shadow ratio, per case
rows=[]
for root in sys.argv[1:]:
  for cd in glob.glob(root+'/*/*/'):
    try: cj=json.load(open(cd+'case.json')); c=json.load(open(cd+'classification.json'))
    except Exception: continue
    nm=cj.get('name') or 'REF'
    if nm.startswith('ref') or nm=='REF': continue
    ev=c.get('evidence') or {}
    L=[(l.get('ratio') or 0,l['name'],l.get('rel'),l.get('envelope')) for l in (ev.get('layers') or []) if isinstance(l,dict)]
    mx=max(L) if L else (0,'-',0,0)
    env=ev.get('envelope') or {}
    sh=ev.get('fp32_shadow') or {}
    rows.append((c.get('largest_ratio') or 0, root.split('/')[-1], cd.split('/')[-3][4:], nm, c['verdict'], c.get('precision'), env.get('floor'),
                 '%s %.3g (rel %.3g env %.3g)'%(mx[1],mx[0],mx[2] or 0,mx[3] or 0), 'shadow %.3g'%(sh.get('largest_ratio') or 0) if sh else ''))
for r in sorted(rows, reverse=True):
    print('%8.3g | %s | %s | %s | %s | %s | floor %s | %s | %s' % r)
