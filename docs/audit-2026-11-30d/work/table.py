import json, sys, glob, os, subprocess
# table.py : one row per (plant, family, precision, case): verdict, first step/layer, summary, acted
W='/tmp/audit11-work'
rows=[]
for pd in sorted(glob.glob(W+'/r/P*-*')):
    if not os.path.isdir(pd): continue
    tag=os.path.basename(pd); nn,prec=tag[1:].split('-')
    acted={}
    out=subprocess.run(['python3',W+'/acted.py',pd,W+('/r/C2-' if nn.endswith('b') else '/r/C-')+prec],capture_output=True,text=True).stdout
    for l in out.splitlines():
        f=[x.strip() for x in l.split('|')]
        acted[(f[0],f[1])]=('yes' if 'DIFFER' in f[2] else 'no')
    for md in sorted(glob.glob(pd+'/*/')):
        fam=os.path.basename(md.rstrip('/')).split('-',1)[1]
        for cd in sorted(glob.glob(md+'*/')):
            try: cj=json.load(open(cd+'case.json'))
            except Exception: continue
            nm=cj.get('name') or 'REF'
            if nm=='REF' or nm.startswith('ref'): continue
            try: c=json.load(open(cd+'classification.json'))
            except Exception: c={'verdict':'-','summary':'no classification.json'}
            import re
            m=re.search(r'(step \d+)', c.get('summary') or ''); where=m.group(1) if m else '-'
            rows.append((nn,fam,prec,nm,c.get('verdict'),where,(c.get('summary') or '').replace('\n',' ').replace('|','/')[:230],acted.get((os.path.basename(md.rstrip('/')),nm),'?')))
rows.sort(key=lambda r:(r[0],r[1],r[2]!='fp32',r[3]))
print('| bug | family | prec | layout | verdict | first step / layer | evidence | acted |')
print('|---|---|---|---|---|---|---|---|')
for r in rows: print('| '+' | '.join(map(str,r))+' |')
