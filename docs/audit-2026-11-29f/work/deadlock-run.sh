#!/bin/bash
cd /tmp/audit7-work
while read f w; do
  o=${f%.json}.out; rm -rf $o; mkdir -p $o
  s=$(date +%s); /tmp/audit7/build/repro launch -n $w --deadlock ${DL:-1} --timeout 400 --run-dir $o/run -- worker --job case --case-file $f --out-dir $o --backend gloo > $o/launch.log 2>&1
  echo "$f world=$w deadlock=${DL:-1} rc=$? $(( $(date +%s)-s ))s $(tail -1 $o/launch.log)"
done < dl/list.txt
