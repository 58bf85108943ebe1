# toposcope testbed — names and helpers shared by up, down, status, fabctl and the checks.
# Sourced, not run. Everything the testbed creates carries a recognisable name so that `down`
# removes exactly that: namespaces tsb-<node>, TAP devices tsb<i> / tsb-ctl, /etc/hosts lines
# ending in "# toposcope-testbed", processes whose pids (with start times) are in $TB_STATE/pids.

TB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
TB_REPO=$(cd "$TB_DIR/../.." && pwd)
TB_BUILD=${TOPOSCOPE_BUILD:-$TB_REPO/build}
TB_FABEMU=$TB_BUILD/bin/toposcope-fabemu
TB_UDPING=$TB_BUILD/bin/toposcope-udping
# Outside /tmp: every slurmd gets a private /tmp, and the configs must be visible to all of them.
TB_STATE=${TOPOSCOPE_TESTBED_STATE:-/var/lib/toposcope-testbed}
# Other distributions' roots (tests/testbed/stack NAME): $TB_STACKS/NAME.
TB_STACKS=$TB_STATE/stacks
TB_NS_PREFIX=tsb-
TB_TAP_PREFIX=tsb
TB_HOSTS_MARK="# toposcope-testbed"
TB_SUBNET_PREFIX=10.77
TB_CTL_ADDR=10.77.0.1
TB_CTL_SOCK=$TB_STATE/run/fabemu.sock
TB_CONF=$TB_STATE/etc/slurm.conf
TB_CTLD_PORT=6917
TB_SLURMD_PORT=6918
TB_HOSTS=${TOPOSCOPE_TESTBED_HOSTS:-/etc/hosts}
# Open MPI on the testbed, for job scripts to export: root may run it, TCP over each node's eth0
# between nodes, shared memory (vader) between the ranks of one node, as on a real cluster.
TB_OMPI_ENV="OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_btl=tcp,vader,self OMPI_MCA_btl_tcp_if_include=eth0 OMPI_MCA_oob_tcp_if_include=eth0"

tb_die() { echo "testbed: $*" >&2; exit 1; }
tb_log() { echo "testbed: $*" >&2; }

tb_require_root() {
  [ "$(id -u)" -eq 0 ] || tb_die "must run as root (namespaces, TAP devices, daemons)"
}

# Node i (0-based, fabric order) -> its address on the test subnet; 10.77.0.0/24 is the root's.
tb_node_addr() {
  local i=$1
  echo "$TB_SUBNET_PREFIX.$((1 + i / 250)).$((1 + i % 250))"
}

tb_ns() { echo "$TB_NS_PREFIX$1"; }

# Where the emulated nodes and the emulator run. Every process of every node (slurmd and all
# it starts, the agents, the test programs) shares one CPU, and the emulator, the network, has
# the last CPU to itself. Left to the scheduler, the nodes' processes each keep to the CPU
# they last slept on: two nodes on one CPU answered each other some us sooner than two on
# different CPUs, and a node beside the busy-polling emulator later still, so every testbed
# had its own small pattern of near and far pairs that no switch made. In 4 of 86 jobs on the
# 8-node demo fabric, discovery saw that pattern inside a leaf and could not settle it as a
# star; with one CPU for all nodes, 32 of 32 jobs on 8 fresh testbeds settled every leaf at
# the fewest samples (doc/testbed.md). TESTBED_NODE_CPUS (a taskset list) says otherwise.
TB_NODE_CPUS=${TESTBED_NODE_CPUS:-0}
tb_fabemu_cpu() { local n; n=$(nproc --all); [ "$n" -lt 2 ] || echo $((n - 1)); }
# tb_node_cpus: those CPUs one by one, "0,1,2" (what a process of a node may run on, unbound)
tb_node_cpus() {
  echo "$TB_NODE_CPUS" | awk -F, '{ out = ""
    for (i = 1; i <= NF; i++) if (split($i, ab, "-") == 2) { for (c = ab[1]; c <= ab[2]; c++) out = out "," c }
                              else out = out "," $i
    print substr(out, 2) }'
}
# "$TB_NODE_EXEC" NODE CMD...: CMD as a process of NODE: in its network namespace, on the
# nodes' CPUs (tests/testbed/node-exec: a program, so that $! of one run with & is CMD's pid).
TB_NODE_EXEC=$TB_DIR/node-exec
export TB_NS_PREFIX TB_NODE_CPUS

tb_stack_root() { echo "$TB_STACKS/$1"; }

# The distribution stack the testbed's Slurm runs from: the running testbed's (up records it),
# else TESTBED_STACK; empty = this machine's own Slurm and munge.
tb_stack() {
  if [ -f "$TB_STATE/run/stack" ]; then cat "$TB_STATE/run/stack"; else echo "${TESTBED_STACK:-}"; fi
}
# tb_slurm CMD...: a Slurm or munge client (sinfo, srun, munge...) of that stack. Slurm clients
# talk only to a slurmctld of a close release (22.05's cannot reach 24.11's), so on another
# stack they run inside its root; SLURM_* and OMPI_* variables go with them.
tb_slurm() {
  local stack
  stack=$(tb_stack)
  if [ -n "$stack" ]; then "$TB_DIR/stack" "$stack" run "$@"; else "$@"; fi
}

# Start time of a process in clock ticks since boot (field 22 of /proc/PID/stat), so a recorded
# pid that was recycled by an unrelated process is never signalled.
tb_starttime() {
  local stat
  stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
  stat=${stat##*) }            # the command name may contain spaces; cut after its ')'
  set -- $stat
  echo "${20}"
}

tb_record_pid() {   # NAME PID
  local st
  st=$(tb_starttime "$2") || tb_die "process $1 (pid $2) is not running"
  echo "$1 $2 $st" >> "$TB_STATE/pids"
}

# True if the recorded NAME PID START still names the same live process.
tb_pid_alive() {
  local st
  st=$(tb_starttime "$1") || return 1
  [ "$st" = "$2" ]
}

# Wait up to SECONDS for COMMAND to succeed, polling every 0.2 s.
tb_wait_for() {
  local seconds=$1; shift
  local end=$((SECONDS + seconds))
  while ! "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || return 1
    sleep 0.2
  done
}

tb_ctl() { "$TB_FABEMU" ctl "$TB_CTL_SOCK" "$@"; }

# tb_ompi_init_crashed FILE: FILE (a job's output) shows a rank that died of SIGSEGV at address 0,
# as Open MPI 4.1.4 (Debian 12) now and then does inside MPI_Init when srun --mpi=pmix starts
# 16 ranks on 8 testbed nodes: a NULL callback called from mca_btl_tcp's event handler (core
# file: PMPI_Init > ompi_mpi_init > opal_progress > libevent > mca_btl_tcp.so > 0x0), in 2 of 40
# steps with the TCP BTL alone and 3 of 80 with vader as well (doc/testbed.md). A test that
# starts such a step runs it once more when this says so, and says it did; a crash of
# toposcope's own code that looked the same would fail the second time as well.
tb_ompi_init_crashed() {
  grep -q 'Signal: Segmentation fault' "$1" && grep -q 'Failing at address: (nil)' "$1"
}

# "R HOST CPUS" per rank, in rank order, CPUS one by one ("0,1", ranges written out): where the
# ranks of a twolevel_bcast run ran (its "rank=R host=H cpus=C" lines, file OUT), and where a
# placement puts them (the hosts of its RANKFILE, the CPUs of its HINTS, hints.yaml).
tb_cpus_one_by_one() {
  awk '{ n = split($3, part, ","); out = ""
         for (i = 1; i <= n; i++)
           if (split(part[i], ab, "-") == 2) { for (c = ab[1]; c <= ab[2]; c++) out = out "," c }
           else out = out "," part[i]
         print $1, $2, substr(out, 2) }'
}
tb_ranks_ran() {   # OUT
  sed -n 's/^rank=\([0-9]*\) host=\([^ ]*\) cpus=\([^ ]*\).*/\1 \2 \3/p' "$1" | tb_cpus_one_by_one | sort -n
}
tb_ranks_placed() {   # RANKFILE HINTS
  join <(sed -n 's/^rank \([0-9]*\)=\([^ ]*\) .*/\1 \2/p' "$1" | sort) \
       <(awk -v what=cpus -f "$TB_REPO/tests/hints_expect.awk" "$2" | sed 's/^rank=\([0-9]*\) cpus=/\1 /' | sort) |
    tb_cpus_one_by_one | sort -n
}

# Slurm's own topology (topology/tree on the fabric file) beside toposcope's groups: stdin has
# "GROUP ADDR" per task, GROUP its TOPOSCOPE_GROUP_LEAF, ADDR its SLURM_TOPOLOGY_ADDR
# ("spine.LEAF.NODE"). True when COUNT tasks came and the tasks that share a LEAF are exactly
# those that share a GROUP.
tb_leaf_groups_match_slurm() {   # COUNT
  awk -v want="$1" '{ n = split($2, part, ".")
       if (n < 2 || $1 == "") bad = 1
       sw = part[n - 1]
       if ((sw in g) && g[sw] != $1) bad = 1
       if (($1 in s) && s[$1] != sw) bad = 1
       g[sw] = $1; s[$1] = sw; t++ }
     END { exit bad || t != want }'
}

# tb_sbatch_wait SECONDS SBATCH-ARGS...: what `timeout SECONDS sbatch --wait ARGS` does, without
# sbatch's own polling, which sleeps 2 s, then up to 10 s, between looks at the job: submit,
# then ask slurmctld every 0.2 s until the job has ended and its epilogs have run (not
# COMPLETING). Prints sbatch's lines ("Submitted batch job N"). Exit status as sbatch --wait's:
# the job's exit code, 1 when it ended otherwise (cancelled, timed out, failed) with code 0;
# 124 when SECONDS passed first, and the job is then cancelled. Slurm's clients of the
# testbed's stack (tb_slurm).
tb_sbatch_wait() {
  local seconds=$1 out id line state code
  shift
  out=$(tb_slurm sbatch "$@") || { echo "$out"; return 1; }
  echo "$out"
  id=$(sed -n 's/^Submitted batch job \([0-9]*\).*/\1/p' <<< "$out")
  [ -n "$id" ] || return 1
  local end=$((SECONDS + seconds))
  while :; do
    line=$(tb_slurm scontrol -o show job "$id" 2>/dev/null)
    state=$(sed -n 's/.* JobState=\([A-Z_]*\).*/\1/p' <<< "$line")
    case $state in
      ""|PENDING|CONFIGURING|RUNNING|COMPLETING|SUSPENDED|REQUEUED|RESIZING) ;;
      *) break ;;
    esac
    if [ $SECONDS -ge $end ]; then
      tb_slurm scancel "$id" 2>/dev/null
      return 124
    fi
    sleep 0.2
  done
  code=$(sed -n 's/.* ExitCode=\([0-9]*\):.*/\1/p' <<< "$line")
  [ "${code:-1}" -ne 0 ] && return "$code"
  [ "$state" = COMPLETED ]
}

# Serialise up/down/status against each other.
tb_lock() {
  mkdir -p "$TB_STATE"
  exec 8>"$TB_STATE/lock"
  flock -w 300 8 || tb_die "another up/down has held $TB_STATE/lock for 5 minutes"
}

tb_namespaces() {
  ip netns list 2>/dev/null | awk -v p="$TB_NS_PREFIX" 'index($1, p) == 1 { print $1 }' | sort -V
}

# Tests and tools that use a testbed hold this lock from up to down, so two of them never tear
# down each other's cluster; they wait for their turn instead (bounded by SECONDS).
tb_session_lock() {
  local seconds=${1:-900}
  mkdir -p "$TB_STATE"
  exec 9>"$TB_STATE/session.lock"
  flock -w "$seconds" 9 || tb_die "the testbed was busy (session lock) for $seconds s"
}

# The start of a TAP test on the testbed: hold the session lock, make $work, arm a watchdog that
# ends the test after MINUTES, tear the testbed down and remove $work on exit, and bring the
# fabric up ("ok"/"Bail out!" lines for the up step).   tb_test_up NAME MINUTES FABRIC PARAMS WHAT
tb_test_up() {
  local name=$1 minutes=$2 fabric=$3 params=$4 what=$5
  tb_session_lock 900
  work=$(mktemp -d "/var/tmp/toposcope-$name.XXXXXX")
  ( exec 9>&-; sleep $((minutes * 60)) & s=$!; trap 'kill $s; exit 0' TERM; wait $s
    echo "# watchdog: the test ran for $minutes minutes" >&2; kill -TERM $$ ) &
  tb_watchdog=$!
  trap 'kill "$tb_watchdog" 2>/dev/null; timeout 120 "$TB_DIR/down" >/dev/null 2>&1; rm -rf "$work"' EXIT
  trap 'exit 1' TERM INT
  timeout 180 "$TB_DIR/up" "$fabric" "$params" > "$work/up.out" 2>&1
  local rc=$?
  ok $rc "$what"
  if [ $rc -ne 0 ]; then
    diag < "$work/up.out"
    bail_out "the testbed did not come up"
  fi
}

tb_taps() {
  ip -o link show 2>/dev/null | awk -F': ' -v p="$TB_TAP_PREFIX" '{ sub(/@.*/, "", $2) }
    $2 ~ ("^" p "([0-9]+|-ctl)$") { print $2 }'
}

# Stop PID (recorded start time START): TERM, up to 5 s grace, then KILL.
tb_stop_pid() {
  local pid=$1 st=$2 i
  tb_pid_alive "$pid" "$st" || return 0
  kill -TERM "$pid" 2>/dev/null || true
  for i in $(seq 50); do
    tb_pid_alive "$pid" "$st" || return 0
    sleep 0.1
  done
  kill -KILL "$pid" 2>/dev/null || true
  for i in $(seq 20); do
    tb_pid_alive "$pid" "$st" || return 0
    sleep 0.1
  done
  tb_log "pid $pid survived SIGKILL"
  return 1
}

# Remove everything `up` made. Safe to run twice and after a half-finished `up`.
tb_teardown() {
  local ns pid st name tap
  # 1. Every process living in a testbed namespace was started for the testbed: slurmd, the
  #    slurmstepds it forked, job tasks, udping servers. They are found through the namespace
  #    (ip netns pids), not by name.
  for ns in $(tb_namespaces); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      kill -TERM "$pid" 2>/dev/null || true
    done
  done
  local end=$((SECONDS + 5))
  while [ $SECONDS -lt $end ]; do
    local left=0
    for ns in $(tb_namespaces); do
      [ -z "$(ip netns pids "$ns" 2>/dev/null)" ] || left=1
    done
    [ $left -eq 1 ] || break
    sleep 0.1
  done
  for ns in $(tb_namespaces); do
    for pid in $(ip netns pids "$ns" 2>/dev/null); do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  # 2. Processes in the root namespace recorded by pid and start time: slurmctld, the
  #    emulator, munged if the testbed started it. The nodes are gone already, so nothing needs
  #    one of them to outlive another: all are stopped at once (each takes a second or two to
  #    shut down).
  if [ -f "$TB_STATE/pids" ]; then
    local stoppers=()
    while read -r name pid st; do
      { tb_stop_pid "$pid" "$st" || tb_log "could not stop $name (pid $pid)"; } &
      stoppers+=($!)
    done < "$TB_STATE/pids"
    [ ${#stoppers[@]} -eq 0 ] || wait "${stoppers[@]}"
    rm -f "$TB_STATE/pids"
  fi
  # 3. Namespaces, then any TAP left in the root namespace (normally they vanish with the
  #    emulator, whose file descriptors keep them alive).
  for ns in $(tb_namespaces); do
    ip netns delete "$ns" 2>/dev/null || tb_log "could not delete namespace $ns"
  done
  for tap in $(tb_taps); do
    ip link delete "$tap" 2>/dev/null || true
  done
  # 4. /etc/hosts lines. Written in place (not sed -i): /etc/hosts may be a bind mount, which
  #    cannot be replaced by rename.
  if [ -f "$TB_HOSTS" ] && grep -qF "$TB_HOSTS_MARK" "$TB_HOSTS"; then
    local kept
    kept=$(grep -vF "$TB_HOSTS_MARK" "$TB_HOSTS" || true)
    printf '%s\n' "$kept" > "$TB_HOSTS"
  fi
  # 5. The scheduler's autogroup setting as it was before up (up says why).
  if [ -s "$TB_STATE/run/autogroup" ] && [ -w /proc/sys/kernel/sched_autogroup_enabled ]; then
    cat "$TB_STATE/run/autogroup" > /proc/sys/kernel/sched_autogroup_enabled 2>/dev/null || true
  fi
  # 6. Runtime state; logs and generated configs stay for post-mortems.
  rm -rf "$TB_STATE/run" "$TB_STATE/slurmctld" "$TB_STATE/slurmd" "$TB_STATE/fingerprint"
}

# TAP for the testbed tests (tests/testbed*.t): tests/tap.sh's ok, diag and tap_end, and the
# plan and bail-outs every one starts with (root; the programs it runs, HINT saying how to
# build them).
. "$TB_REPO/tests/tap.sh"

tb_tap_begin() {   # PLAN HINT PROGRAM...
  local plan=$1 hint=$2 bin
  shift 2
  tap_plan "$plan"
  [ "$(id -u)" -eq 0 ] || bail_out "the testbed needs root (namespaces, TAP devices, daemons)"
  for bin in "$@"; do
    [ -x "$bin" ] || bail_out "$bin is missing ($hint)"
  done
}

# The node agents (toposcope-prolog) as the job prolog starts them: one per node of NODELIST
# (comma-separated, plain names), each in its node's namespace, all at once. Agent NODE of job
# JOB spools into $work/JOB/NODE, logs to $work/JOB/NODE.log and records "exit-status wall-ms"
# in $work/JOB/NODE.rc; tb_agent_pids holds the launchers. ARGS go to every agent.
#   tb_agents_launch JOB BUDGET-MS NODELIST [ARGS...];  tb_agents_wait
TB_PROLOG=$TB_BUILD/bin/toposcope-prolog
TB_AGENT_PORT_BASE=900 TB_AGENT_PORT_SPAN=100
# TB_AGENTS_ONLY=NODELIST (comma-separated) starts only those nodes' agents, the others of
# the job's hostlist being absent (a leader that never answers, say).
tb_agents_launch() {
  local job=$1 budget=$2 list=$3 nd
  shift 3
  mkdir -p "$work/$job"
  tb_agent_pids=()
  local run=${TB_AGENTS_ONLY:-$list}
  for nd in ${run//,/ }; do
    ( s=$(date +%s%N)
      "$TB_NODE_EXEC" "$nd" "$TB_PROLOG" --job "$job" --nodes "$list" --self "$nd" \
        --budget-ms "$budget" --spool "$work/$job/$nd" --port-base $TB_AGENT_PORT_BASE \
        --port-span $TB_AGENT_PORT_SPAN -v "$@" > "$work/$job/$nd.log" 2>&1 &
      echo $! > "$work/$job/$nd.pid"
      wait $!
      echo "$? $(( ($(date +%s%N) - s) / 1000000 ))" > "$work/$job/$nd.rc" ) 9>&- 2>/dev/null &
    tb_agent_pids+=($!)
  done
}
tb_agents_wait() { local p; for p in "${tb_agent_pids[@]}"; do wait "$p"; done; }
tb_agent_spool() { echo "$work/$1/$2/$1"; }   # JOB NODE -> the job's spool directory there
# tb_agents_same_file JOB NODELIST FILE: FILE identical in every agent's spool
tb_agents_same_file() {
  local first="" nd
  for nd in ${2//,/ }; do
    [ -f "$(tb_agent_spool "$1" "$nd")/$3" ] || { echo "$nd: no $3"; return 1; }
    if [ -z "$first" ]; then first=$(tb_agent_spool "$1" "$nd")/$3
    elif ! cmp -s "$first" "$(tb_agent_spool "$1" "$nd")/$3"; then echo "$nd: $3 differs"; return 1; fi
  done
}
