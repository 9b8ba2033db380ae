import os, sys
# table.py : audit 11's table() (../../audit-2026-11-30d/work/table.py) with this audit's paths; acted = this
# audit's acted2.py (audit 10's acted.py, plus "SHADOW DIFFERS" when only a shadow's latents moved) against the
# clean build's same case (r/C-<prec>), an image difference included. Family column: "<set>-<family>".
sys.path.insert(0, '/work/main/docs/audit-2026-11-30d/work')
from table import table  # noqa: E402

W = '/tmp/audit21-work'
table(W, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'acted2.py'), lambda nn, prec: W + '/r/C-' + prec,
      1, True, 200, '| bug | set-family | prec | layout | verdict | first step | evidence (summary, cut at 200) | acted |')
