#!/bin/bash
# Slurm Epilog: stops the job's epcached with SIGTERM (its graceful stop) and removes its
# directory. Never fails, so the node is never drained on its account.
dir="/run/epcache/job-$SLURM_JOB_ID"
if [ -r "$dir/epcached.pid" ]; then
    pid=$(cat "$dir/epcached.pid")
    /usr/bin/kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 50); do /usr/bin/kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
fi
/usr/bin/rm -rf -- "$dir"
exit 0
