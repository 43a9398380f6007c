#!/bin/bash
# A batch job that monitors its own program: one epcached per node, started by the job itself
# (no administrator involved), on its default Unix socket in the job's private directory
# (mode 0700; only the job's user is served). Tools on another node would need TCP with a token:
# add `--listen 0.0.0.0:50551 --token-file FILE` (at least 16 random characters).
#
#   sbatch deploy/slurm/epcached-job.sh ./my_program args...
#
#SBATCH --job-name=epcache
#SBATCH --nodes=1
#SBATCH --ntasks-per-node=1
set -euo pipefail

export EPCACHE_RUNTIME_DIR="${TMPDIR:-/tmp}/epcache-$SLURM_JOB_ID"
export EPCACHE_DAEMON="unix:$EPCACHE_RUNTIME_DIR/epcached.sock"
mkdir -p -m 0700 "$EPCACHE_RUNTIME_DIR"

# One daemon per node; --overlap lets it share the allocation with the program's step.
srun --nodes="$SLURM_NNODES" --ntasks-per-node=1 --overlap \
    epcached --runtime-dir "$EPCACHE_RUNTIME_DIR" &
daemons=$!
trap 'kill -TERM "$daemons" 2>/dev/null; wait "$daemons" 2>/dev/null || true' EXIT

# The program waits up to 60 s at start for a tool (epcache step/continue, or a script).
EPCACHE_WAIT=60 srun --overlap "$@"
