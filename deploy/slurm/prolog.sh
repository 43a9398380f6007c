#!/bin/bash
# Slurm Prolog (runs as root on each node of the job): starts a per-job epcached as the job's
# user. It must never fail the job: a non-zero exit would drain the node, so every error is
# logged and ignored. Pair it with epilog.sh and, for the variables, task-prolog.sh.
#   slurm.conf:  Prolog=/etc/slurm/epcache/prolog.sh  Epilog=/etc/slurm/epcache/epilog.sh
#                TaskProlog=/etc/slurm/epcache/task-prolog.sh  PrologFlags=Alloc
dir="/run/epcache/job-$SLURM_JOB_ID"
if ! /usr/bin/install -d -m 0700 -o "$SLURM_JOB_USER" "$dir"; then
    /usr/bin/logger -t epcache-prolog "cannot create $dir for job $SLURM_JOB_ID"
    exit 0
fi
# runuser passes the epilog's SIGTERM on to epcached; setsid detaches it from slurmd's session.
# epcached listens on $dir/epcached.sock by default and serves only the job's user (peer
# credentials); remote tools would need --listen HOST:PORT with --token-file (see README).
/usr/bin/setsid /usr/sbin/runuser -u "$SLURM_JOB_USER" -- \
    /usr/local/bin/epcached --runtime-dir "$dir" \
    >>"$dir/epcached.log" 2>&1 </dev/null &
echo $! >"$dir/epcached.pid"
exit 0
