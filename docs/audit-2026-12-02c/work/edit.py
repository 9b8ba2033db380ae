import sys
# edit.py FILE 'old' 'new' : exact single replacement
f,old,new=sys.argv[1],sys.argv[2],sys.argv[3]
s=open(f).read()
assert s.count(old)==1, (f, s.count(old), old)
open(f,'w').write(s.replace(old,new))
