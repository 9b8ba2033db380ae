import json, glob, os, re, sys, collections
# table.py TAG... -> markdown: layout x family cells "fp32 / bf16"
def short(v, s):
    m=re.search(r'PSNR ([0-9.]+) dB', s)
    if v=='approx': return f"a {float(m.group(1)):.1f}" if m else 'a'
    if v=='identical': return 'id'
    if v=='drift': return 'dr'
    if v=='BUG' and 'below its bound' in s: return f"**BUG {float(m.group(1)):.1f}**"
    if v=='BUG': return '**BUG xinf**' if 'xinf' in s else '**BUG**'
    if v=='CONFIG_ERROR': return 'CE'
    return f'**{v}**'
cells=collections.defaultdict(dict); fams=[]; lays=[]
for tag in sys.argv[1:]:
    for cd in glob.glob(f'r/{tag}/*/*/'):
        try: cj=json.load(open(cd+'case.json'))
        except Exception: continue
        nm=cj.get('name') or ''
        if not nm or nm.startswith('ref'): continue
        fam=os.path.basename(os.path.dirname(cd.rstrip('/'))).split('-',1)[1]
        v=s='-'
        try: c=json.load(open(cd+'classification.json')); v=c['verdict']; s=c.get('summary','')
        except Exception:
            try: r=json.load(open(cd+'result.json')); v=r.get('status','?')
            except Exception: v='?'
        lay,prec=nm.rsplit(' ',1)
        extra=tag[2:] if tag.startswith('a4') else ''
        lay=lay+(' ['+{'f':'fast','t':'threads 2'}.get(extra,extra)+']' if extra else '')
        cells[(lay,fam)][prec]=short(v,s)
        if fam not in fams: fams.append(fam)
        if lay not in lays: lays.append(lay)
order=['sd3','sd3b','flux','sd3d','dit','ditc','ditd']
fams=[f for f in order if f in fams]
print('| layout | '+' | '.join(fams)+' |'); print('|---'*(len(fams)+1)+'|')
for l in lays:
    row=[]
    for f in fams:
        c=cells.get((l,f),{})
        row.append(' / '.join(c.get(p,'·') for p in ('fp32','bf16')) if c else '·')
    print(f'| {l} | '+' | '.join(row)+' |')
