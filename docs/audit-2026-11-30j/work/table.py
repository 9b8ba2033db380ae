import os, sys
# table.py : audit 11's table() (../../audit-2026-11-30d/work/table.py) with this audit's paths; acted = audit 10's
# acted.py against the clean build's same case (r/C-<prec>), an image difference included
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '../../audit-2026-11-30d/work'))
from table import table  # noqa: E402

W = '/tmp/audit17-work'
table(W, '/work/main/docs/audit-2026-11-30c/work/acted.py', lambda nn, prec: W + '/r/C-' + prec, 2, True, 200,
      '| bug | family | prec | layout | verdict | first step | evidence (summary, cut at 200) | acted |')
