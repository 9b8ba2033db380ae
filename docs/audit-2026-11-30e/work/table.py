import json, sys, glob, os, re, subprocess
# table.py : one row per (plant, family, precision, case): verdict, first step / layer, summary, acted
# (audit 11's table.py with this audit's paths; acted = audit 10's acted.py against the clean build's same case)
W='/tmp/audit12-work'; ACTED='/work/main/docs/audit-2026-11-30c/work/acted.py'
rows=[]
def clean_of(nn, prec): return W+('/r/CI-' if nn.startswith('04') else '/r/C-')+prec
for pd in sorted(glob.glob(W+'/r/P*-*')):
    if not os.path.isdir(pd): continue
    nn,prec=os.path.basename(pd)[1:].split('-')
    acted={}
    out=subprocess.run(['python3',ACTED,pd,clean_of(nn,prec)],capture_output=True,text=True).stdout
    for l in out.splitlines():
        f=[x.strip() for x in l.split('|')]
        acted[(f[0],f[1])]=('yes' if 'DIFFER' in f[2] or f[3]!='images differ: -' else 'no')
    for md in sorted(glob.glob(pd+'/*/')):
        fam=os.path.basename(md.rstrip('/')).split('-',2)[2]
        for cd in sorted(glob.glob(md+'*/')):
            try: cj=json.load(open(cd+'case.json'))
            except Exception: continue
            nm=cj.get('name') or 'REF'
            if nm=='REF' or nm.startswith('ref'): continue
            try: c=json.load(open(cd+'classification.json'))
            except Exception: c={'verdict':'-','summary':'no classification.json'}
            s=(c.get('summary') or '')
            m=re.search(r'(step \d+)', s); where=m.group(1) if m else '-'
            rows.append((nn,fam,prec,nm,c.get('verdict'),where,s.replace('\n',' ').replace('|','/')[:200],acted.get((os.path.basename(md.rstrip('/')),nm),'?')))
rows.sort(key=lambda r:(r[0],r[1],r[2]!='fp32',r[3]))
print('| bug | family | prec | layout | verdict | first step | evidence (summary, cut at 200) | acted |')
print('|---|---|---|---|---|---|---|---|')
for r in rows: print('| '+' | '.join(map(str,r))+' |')
