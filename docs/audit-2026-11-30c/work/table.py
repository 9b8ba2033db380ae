import json, sys, glob, os, collections
# table.py RESDIR... : markdown rows per (sweep, family): cases, verdict counts, largest ratio (and where)
for root in sys.argv[1:]:
  for md in sorted(glob.glob(root+'/*/')):
    fam=os.path.basename(md.rstrip('/')).split('-',1)[1]
    cnt=collections.Counter(); names=[]; mx=(0,'')
    for cd in sorted(glob.glob(md+'*/')):
        try: cj=json.load(open(cd+'case.json'))
        except Exception: continue
        nm=cj.get('name') or 'REF'
        if nm=='REF' or nm.startswith('ref'): continue
        try: c=json.load(open(cd+'classification.json')); v=c['verdict']; r=c.get('largest_ratio') or 0
        except Exception:
            try: v=json.load(open(cd+'result.json')).get('status','?')
            except Exception: v='SKIPPED?'
            r=0
        cnt[v]+=1; names.append(nm)
        if r>mx[0]: mx=(r,nm)
    y=open(glob.glob('/tmp/audit10-work/m/%s-%s.yaml'%(os.path.basename(root.rstrip('/')),fam))[0]).read()
    base=[l for l in y.splitlines() if l.startswith('base:')][0][6:]
    print('| %s | %s | %s | %s | %s | %.3g (%s) |'%(os.path.basename(root.rstrip('/')), fam, base.replace('|','/'), ', '.join(sorted(names)), ', '.join('%s %d'%kv for kv in sorted(cnt.items())), mx[0], mx[1]))
