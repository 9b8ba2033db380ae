import json, sys, glob
# maxratio.py RESDIR : per case, the largest layer ratio and the step local-error ratios (classification.json evidence)
for cd in sorted(glob.glob(sys.argv[1]+'/*/*/')):
    try: cj=json.load(open(cd+'case.json')); c=json.load(open(cd+'classification.json'))
    except Exception: continue
    nm=cj.get('name') or 'REF'
    if nm.startswith('ref') or nm=='REF': continue
    ev=c.get('evidence',{})
    L=[(l.get('ratio',0),l['name'],l.get('rel'),l.get('envelope')) for l in ev.get('layers',[]) if isinstance(l,dict)]
    mx=max(L) if L else None
    st=ev.get('steps') or ev.get('local_error') or []
    sr=[]
    for s in (st if isinstance(st,list) else []):
        if isinstance(s,dict): sr.append(round(s.get('ratio',0),2))
    print(cd.split('/')[-3], nm, c['verdict'], 'max layer', (round(mx[0],2),mx[1],'%.3g'%mx[2],'%.3g'%mx[3]) if mx else '-', 'steps', sr, 'inv', (ev.get('invariant_shadow') or {}).get('first_difference', '?') if isinstance(ev.get('invariant_shadow'),dict) else '?')
