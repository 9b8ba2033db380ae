#!/bin/bash
# clean4.sh : the false alarm's case (dit sharpen 8, ring2; uly2 beside it) with 6 twins per reference, and with the
# case's attention flash (the ring merge is an online-softmax merge, as flash's); the clean build only, fp32
W=/work/main/docs/audit-2026-11-30k/work
SEDX='$a classify: {twins: 6}' $W/runx.sh C-fp32 sh8t6 dit "precision: fp32, sharpen: 8" -- 'uly2|ulysses: 2' 'ring2|ring: 2'
SEDX='' $W/runx.sh C-fp32 sh8fl dit "precision: fp32, sharpen: 8" -- 'ring2fl|ring: 2, attention: flash' 'flash|attention: flash'
# added: sharpen 16 (classification.md's figure: ring=2 on dit-tiny sharpened x16 is drift at 0.70x)
$W/runa.sh C-fp32 sh16 dit "precision: fp32, sharpen: 16" -- 'uly2|ulysses: 2' 'ring2|ring: 2'
