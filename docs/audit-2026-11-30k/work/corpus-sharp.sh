#!/bin/bash
# corpus-sharp.sh : the project's own drift corpus (tests/classify/corpus-dit.yaml) cut to layouts dp=2, ring=2,
# ulysses=2 ring=2, attention=flash x ddim x fp32 x sharpen=16, on the clean build (into r/C-corpus)
W=/tmp/audit18-work; mkdir -p $W/m $W/r
python3 - <<'PY'
import re
s = open('/work/main/tests/classify/corpus-dit.yaml').read().replace('name: classify-corpus-dit', 'name: a18-corpus-dit-sharp')
keep = {'layout': ['ring=2', 'attention=flash"', 'dp=2"'], 'sampling': ['"ddim"'], 'arithmetic': ['"fp32"'],
        'attention_sharpness': ['sharpen=16']}
out, sec = [], None
for l in s.splitlines():
    m = re.match(r'  (\w+):$', l)
    if m: sec = m.group(1); out.append(l); continue
    if l.startswith('    - {') and sec in keep and not any(k in l for k in keep[sec]): continue
    out.append(l)
open('/tmp/audit18-work/m/C-fp32-corpus-sharp.yaml', 'w').write('\n'.join(out) + '\n')
PY
cd /tmp/audit18 && timeout 600 nice -n 10 ./build/repro --matrix $W/m/C-fp32-corpus-sharp.yaml --results $W/r/C-corpus \
  --progress plain --no-report > $W/r/C-corpus.log 2>&1; echo "corpus rc=$?"
