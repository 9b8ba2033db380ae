import json, sys, os, glob, struct
# acted.py PLANTDIR CLEANDIR : per case verdict, summary, first step/layer, PSNR plant vs clean, acted
def lat(p):
    try:
        b=open(p,'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); d=b[8+n:]
        o=h['latents']['data_offsets']; return d[o[0]:o[1]]
    except Exception: return None
def cases(root):
    out={}
    for cd in glob.glob(root+'/*/*/'):
        try: cj=json.load(open(cd+'case.json'))
        except Exception: continue
        nm=cj.get('name') or 'REF'
        if nm.startswith('ref '): continue
        fam=os.path.basename(os.path.dirname(cd.rstrip('/'))).split('-',1)[1]
        out[(fam,nm)]=cd
    return out
def info(cd):
    try: c=json.load(open(cd+'classification.json'))
    except Exception: return ('-','-','-','-')
    ev=c.get('evidence',{}); fs=ev.get('first_step') or {}; fl=ev.get('first_layer') or {}
    ps='-'
    try:
        m=json.load(open(cd+'metrics.json')); ps=m.get('psnr', m.get('psnr_min','-'))
    except Exception: pass
    import re
    mm=re.search(r'PSNR ([0-9.]+) dB', c.get('summary',''))
    if mm: ps=mm.group(1)
    return (c['verdict'], c.get('summary','')[:220], f"{fs.get('step','-')}/{fl.get('name','-')}", ps)
P=cases(sys.argv[1]); C=cases(sys.argv[2])
for k in sorted(P):
    v,s,fl,ps=info(P[k]); cv=cps='-'; a='?'
    if k in C:
        cv,_,_,cps=info(C[k]); a='ACTED' if lat(P[k]+'latents.safetensors')!=lat(C[k]+'latents.safetensors') else 'same'
    print(f"{k[0]} | {k[1]} | {v} | {fl} | psnr {ps} (clean {cv} {cps}) | {a} | {s}")
