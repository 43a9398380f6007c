#!/bin/bash
# Slurm TaskProlog (runs as the job's user before each task): lines printed as `export` are
# put into the task's environment, so programs announce themselves to the job's daemon and
# tools in the job find it (EPCACHE_DAEMON is where epcache looks by default anyway: the socket
# in EPCACHE_RUNTIME_DIR; it is exported for tools that do not know that default).
echo "export EPCACHE_RUNTIME_DIR=/run/epcache/job-$SLURM_JOB_ID"
echo "export EPCACHE_DAEMON=unix:/run/epcache/job-$SLURM_JOB_ID/epcached.sock"
