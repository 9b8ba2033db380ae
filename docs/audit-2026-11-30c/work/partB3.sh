#!/bin/bash
# partB3.sh: plant 06 (fp32, bf16), plant then clean
W=/tmp/audit10-work
for p in fp32 bf16; do
 BIN=$W/bin/06-flux-rope-freq-bf16-lastrank $W/runa.sh D06-$p flux "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2' 'uly2|ulysses: 2'
 $W/runa.sh D06-$p-clean flux "precision: $p" -- 'dp2|dp: 2' 'ring2|ring: 2' 'uly2|ulysses: 2'
done
