import json, sys, os, glob
# sum2.py RESDIR... : fam | name | verdict | summary   (verdict from classification.json, else status)
for root in sys.argv[1:]:
  for md in sorted(glob.glob(root+'/*/')):
    fam=os.path.basename(md.rstrip('/')).split('-',1)[1]
    rows=[]
    for cd in glob.glob(md+'*/'):
        try: cj=json.load(open(cd+'case.json'))
        except Exception: continue
        nm=cj.get('name') or 'REF'
        if nm.startswith('ref ') or nm=='REF': continue
        v=s='-'
        try:
            c=json.load(open(cd+'classification.json')); v=c['verdict']; s=c.get('summary','')
        except Exception:
            for f in ('result.json','done.json'):
                try:
                    r=json.load(open(cd+f)); v=r.get('status',v); s=r.get('error',r.get('message',s)) or s; break
                except Exception: pass
        rows.append((fam,nm,v,s.replace('\n',' ')))
    for r in sorted(rows): print(' | '.join(r))
