import os, sys
# table.py : audit 11's table() (table_lib.py, copied) with audit 23's paths; acted = acted2.py (audit 19/20's) against
# the clean build's same case (r/C-<prec>), an image difference included. Family column: "<set>-<family>".
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from table_lib import table  # noqa: E402
W = '/work/audit23-work'
table(W, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'acted2.py'), lambda nn, prec: W + '/r/C-' + prec,
      1, True, 200, '| bug | set-family | prec | layout | verdict | first step | evidence (summary, cut at 200) | acted |')
