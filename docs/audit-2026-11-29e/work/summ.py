# summ.py RESDIR [BASEDIR]: one line per case: matrix, name, verdict, first step/layer, by_ratio, largest, acted (latents tensor bytes vs base same matrix-name+case name)
import json, sys, os, struct
def lat(p):
    try:
        b=open(p,'rb').read(); n=struct.unpack('<Q',b[:8])[0]; h=json.loads(b[8:8+n]); d=b[8+n:]
        o=h['latents']['data_offsets']; return d[o[0]:o[1]]
    except Exception as e: return None
def cases(root):
    out={}
    for m in sorted(os.listdir(root)):
        md=os.path.join(root,m)
        if not os.path.isdir(md): continue
        for c in os.listdir(md):
            cd=os.path.join(md,c)
            if not os.path.exists(cd+'/case.json'): continue
            cj=json.load(open(cd+'/case.json'))
            nm=cj.get('name') or 'REF'
            if nm=='REF' or not cj.get('name'):
                nm='REF '+cj['precision']+' '+cj['sampler']+(' '+cj['attention'] if cj['attention']!='math' else '')
            fam=m.split('-',1)[1]
            out[(fam,nm)]=cd
    return out
res=cases(sys.argv[1]); base=cases(sys.argv[2]) if len(sys.argv)>2 else {}
for k in sorted(res):
    cd=res[k]
    try: c=json.load(open(cd+'/classification.json'))
    except Exception: print(k,'no classification'); continue
    ev=c.get('evidence',{})
    fs=ev.get('first_step',{}); fl=ev.get('first_layer',{})
    acted=''
    if k in base:
        a=lat(cd+'/latents.safetensors'); b=lat(base[k]+'/latents.safetensors')
        acted='ACTED' if a!=b else 'same'
        bc=json.load(open(base[k]+'/classification.json')); bl=bc.get('largest_ratio')
    else: bl=None
    print(f"{k[0]:5} {k[1]:22} {c['verdict']:10} step={fs.get('step','-')} what={fs.get('what','-')[:40]!r} layer={fl.get('name','-')}@{fl.get('step','-')} by_ratio={c.get('by_ratio','-')} ratio={c.get('largest_ratio',0):.3g} (base {bl if bl is None else round(bl,3)}) {acted}")
    if len(sys.argv)>3: print('    ', c['summary'][:400])
