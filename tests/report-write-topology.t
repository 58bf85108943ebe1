#!/usr/bin/env bash
# toposcope report --write-topology: the tree the records measured, for Slurm. Jobs on two
# fabrics that never shared a job (n[1-8] under a1, a2; m[1-6] under b1, b2), measured by the
# simulator and recorded by toposcope-epilog. topology.conf holds them as two top switches,
# topology.yaml as two topologies, --topology-format block as blocks; each is checked against
# what Slurm's parser accepts (there is no slurmctld here: the rules are checked instead), the
# same records give the same bytes in any order, nodes Slurm does not know (--nodes, or a
# stand-in scontrol) are left out and named, and a tree with nothing left is refused with the
# file untouched.
set -u
cd "$(dirname "$0")/.."
. tests/tap.sh
tap_cli_env

printf 'SwitchName=a0 Switches=a[1-2]\nSwitchName=a1 Nodes=n[1-4]\nSwitchName=a2 Nodes=n[5-8]\n' > "$tmp/a.conf"
printf 'SwitchName=b0 Switches=b[1-2]\nSwitchName=b1 Nodes=m[1-3]\nSwitchName=b2 Nodes=m[4-6]\n' > "$tmp/b.conf"
mkdir -p "$tmp/rec" "$tmp/spool" "$tmp/out"
# job JOB SEED FABRIC NODES: the prolog's files as sim measures them, then the epilog's record
job() {
    local j=$1 seed=$2 fabric=$3 nodes=$4
    "$bin" sim --fabric "$fabric" --profile ideal-ethernet --seed "$seed" --out "$tmp/sim-$j" > /dev/null || return 1
    mkdir -p "$tmp/spool/$j"
    cp "$tmp/sim-$j/tree.yaml" "$tmp/sim-$j/links.yaml" "$tmp/spool/$j/"
    printf 'job: %s\nstatus: measured\nunreachable: []\n' "$j" > "$tmp/spool/$j/status.yaml"
    "$epilog" --job "$j" --nodes "$nodes" --self "$5" --uid 0 --spool "$tmp/spool" --records "$tmp/rec" \
        --no-actions --time 1763700000 2>> "$tmp/epilog.log"
}
job 1 1 "$tmp/a.conf" 'n[1-8]' n1 && job 2 2 "$tmp/b.conf" 'm[1-6]' m1 && job 3 3 "$tmp/a.conf" 'n[1-8]' n1 ||
    bail_out "the records could not be made (see $tmp/epilog.log)"
all='n[1-8],m[1-6]'
report() { "$bin" report --records "$tmp/rec" "$@" > /dev/null 2> "$tmp/err"; }

# --- topology.conf
report --write-topology "$tmp/out/t.conf" --nodes "$all"; ok $? "topology.conf written"
cat > "$tmp/want.conf" <<'EOS'
# inferred by toposcope report from the jobs' measured leaf groups
# topology.conf written by toposcope: leaf switches first
SwitchName=leaf1 Nodes=m[1-3]
SwitchName=leaf2 Nodes=m[4-6]
SwitchName=leaf3 Nodes=n[1-4]
SwitchName=leaf4 Nodes=n[5-8]
SwitchName=top1 Switches=leaf[1-2]
SwitchName=top2 Switches=leaf[3-4]
EOS
diff "$tmp/want.conf" "$tmp/out/t.conf" > "$tmp/diff"; ok $? "the two fabrics as two top switches, leaves as measured"
diag < "$tmp/diff"
grep -q "wrote $tmp/out/t.conf (topology.conf): 14 nodes, 6 switches, 2 fabrics" "$tmp/err"; ok $? "and said"

# Slurm's topology/tree rules (topology.conf(5), slurmctld's reader): KEY=VALUE tokens of the
# known keys, SwitchName= once per line and each switch once, Switches= or Nodes= on each line,
# every switch listed defined, one parent each, every node under one switch, hostlists that
# expand; and for topology/block, BlockName= with Nodes= and one BlockSizes= whose sizes grow
# by powers of two, every block at least the base size.
cat > "$tmp/slurmconf.py" <<'PY'
import re, sys
def expand(expr):
    out = []
    for part in re.findall(r'[^,\[]+(?:\[[^\]]*\])?[^,\[]*', expr):
        m = re.fullmatch(r'([^\[]*)\[([^\]]+)\](.*)', part)
        if not m:
            out.append(part); continue
        for r in m.group(2).split(','):
            a, _, b = r.partition('-'); b = b or a
            if not (a.isdigit() and b.isdigit() and int(a) <= int(b)): sys.exit('bad range ' + r)
            out += [m.group(1) + str(i).zfill(len(a)) + m.group(3) for i in range(int(a), int(b) + 1)]
    return out
kind, path = sys.argv[1], sys.argv[2]
lines = [l.split('#')[0].split() for l in open(path)]
lines = [l for l in lines if l]
keys = {'tree': {'switchname', 'switches', 'nodes', 'linkspeed'}, 'block': {'blockname', 'nodes', 'blocksizes'}}[kind]
switches, parents, nodes = {}, {}, {}
sizes = None
for toks in lines:
    kv = {}
    for t in toks:
        k, eq, v = t.partition('=')
        if not eq or not v or k.lower() not in keys or k.lower() in kv: sys.exit('bad token ' + t)
        kv[k.lower()] = v
    if kind == 'block' and 'blocksizes' in kv:
        if sizes is not None or len(kv) > 1: sys.exit('BlockSizes= twice or with others')
        sizes = [int(x) for x in kv['blocksizes'].split(',')]
        continue
    name = kv.get('switchname' if kind == 'tree' else 'blockname')
    if not name or len(expand(name)) != 1 or name in switches: sys.exit('name missing or twice: %s' % toks)
    if 'switches' not in kv and 'nodes' not in kv: sys.exit(name + ' has no children')
    switches[name] = len(expand(kv.get('nodes', '')) if 'nodes' in kv else [])
    for c in expand(kv.get('switches', '')) if 'switches' in kv else []:
        if c in parents: sys.exit(c + ' has two parents')
        parents[c] = name
    for n in expand(kv['nodes']) if 'nodes' in kv else []:
        if n in nodes: sys.exit(n + ' twice')
        nodes[n] = name
missing = [c for c in parents if c not in switches]
if missing: sys.exit('switches listed, never defined: %s' % missing)
if not nodes: sys.exit('no node')
if kind == 'block':
    if not sizes: sys.exit('no BlockSizes=')
    if any(b % a or (b // a) & (b // a - 1) or b <= a for a, b in zip(sizes, sizes[1:])): sys.exit('sizes %s' % sizes)
    if min(switches.values()) < sizes[0]: sys.exit('a block below the base size')
print(' '.join(sorted(nodes, key=lambda n: (n[0], int(n[1:])))))
PY
python3 "$tmp/slurmconf.py" tree "$tmp/out/t.conf" > "$tmp/nodes" 2>&1 &&
  [ "$(cat "$tmp/nodes")" = "m1 m2 m3 m4 m5 m6 n1 n2 n3 n4 n5 n6 n7 n8" ]
ok $? "topology.conf keeps Slurm's rules, every node once"; diag < "$tmp/nodes"
"$bin" sim --fabric "$tmp/out/t.conf" --profile ideal-ethernet --method pmm --no-links --out "$tmp/readback" > /dev/null 2>&1
ok $? "toposcope's own topology.conf reader takes it"

# --- the same bytes: again, and with the records read in another order
report --write-topology "$tmp/out/t2.conf" --nodes "$all" && cmp -s "$tmp/out/t.conf" "$tmp/out/t2.conf"
ok $? "a second run writes the same bytes"
mkdir -p "$tmp/rec2"
for f in "$tmp"/rec/job-*.yaml; do n=$(basename "$f"); cp "$f" "$tmp/rec2/$((9 - ${n//[^0-9]/}))-$n"; done
"$bin" report --records "$tmp/rec2" --write-topology "$tmp/out/t3.conf" --nodes "$all" > /dev/null 2>&1 &&
  cmp -s "$tmp/out/t.conf" "$tmp/out/t3.conf"
ok $? "the records read in the other order: the same bytes"
[ -z "$(ls "$tmp/out" | grep -v '^t[23]\?\.conf$')" ]; ok $? "no temporary file left beside them"

# --- topology/block
report --write-topology "$tmp/out/b.conf" --topology-format block --nodes "$all" &&
  python3 "$tmp/slurmconf.py" block "$tmp/out/b.conf" > "$tmp/nodes" 2>&1
ok $? "topology.conf for topology/block keeps Slurm's rules"; diag < "$tmp/nodes"
grep -v '^#' "$tmp/out/b.conf" > "$tmp/b.lines"
printf 'BlockName=leaf1 Nodes=m[1-3]\nBlockName=leaf2 Nodes=m[4-6]\nBlockName=leaf3 Nodes=n[1-4]\nBlockName=leaf4 Nodes=n[5-8]\nBlockSizes=3\n' |
  diff - "$tmp/b.lines" > "$tmp/diff"
ok $? "a block per leaf; two fabrics: BlockSizes= the base size alone"; diag < "$tmp/diff"
"$bin" report --records "$tmp/rec" --write-topology "$tmp/out/b1.conf" --topology-format block --nodes 'n[1-8]' 2> /dev/null >&2 &&
  [ "$(grep '^BlockSizes=' "$tmp/out/b1.conf")" = "BlockSizes=4,8" ]
ok $? "one fabric: BlockSizes=4,8, pairs of neighbouring blocks allowed"

# --- topology.yaml
report --write-topology "$tmp/out/t.yaml" --nodes "$all" && report --write-topology "$tmp/out/b.yaml" --topology-format block --nodes "$all"
ok $? "topology.yaml written, as a tree and as blocks"
python3 - "$tmp/out/t.yaml" "$tmp/out/b.yaml" > "$tmp/py" 2>&1 <<'PY'
import sys, yaml
t = yaml.safe_load(open(sys.argv[1])); b = yaml.safe_load(open(sys.argv[2]))
assert [x['topology'] for x in t] == ['fabric1', 'fabric2'], t
assert [x['cluster_default'] for x in t] == [True, False], t
for x in t + b:
    assert list(x)[0] == 'topology', 'topology is the first attribute: %s' % list(x)
    assert len(set(x) & {'tree', 'block', 'flat'}) == 1, x
sw = {s['switch']: s for s in t[0]['tree']['switches']}
assert sw == {'top1': {'switch': 'top1', 'children': 'leaf[1-2]'}, 'leaf1': {'switch': 'leaf1', 'nodes': 'm[1-3]'},
              'leaf2': {'switch': 'leaf2', 'nodes': 'm[4-6]'}}, sw
assert [s['switch'] for s in t[1]['tree']['switches']] == ['top2', 'leaf3', 'leaf4'], t[1]
assert t[1]['tree']['switches'][1]['nodes'] == 'n[1-4]'
assert b[0]['block'] == {'block_sizes': [3, 6], 'blocks': [{'block': 'leaf1', 'nodes': 'm[1-3]'},
                                                           {'block': 'leaf2', 'nodes': 'm[4-6]'}]}, b[0]
assert b[1]['block']['block_sizes'] == [4, 8] and b[1]['cluster_default'] is False, b[1]
PY
ok $? "topology.yaml: a topology per fabric, fabric1 the cluster default; trees and blocks as measured"
diag < "$tmp/py"

# --- only nodes Slurm knows
report --write-topology "$tmp/out/k.conf" --nodes 'n[1-8],m[1-3],x9'; rc=$?
[ $rc -eq 0 ] && ! grep -q 'm[4-6]\|leaf2' "$tmp/out/k.conf" && grep -q '^SwitchName=top1 Switches=leaf1$' "$tmp/out/k.conf"
ok $? "--nodes: m[4-6] left out, and their leaf with them"
grep -q "warning: 3 nodes Slurm does not know (--nodes n\[1-8\],m\[1-3\],x9) left out of $tmp/out/k.conf: m\[4-6\]; 1 switch left" "$tmp/err"
ok $? "the warning names them"; diag < "$tmp/err"
printf 'precious\n' > "$tmp/out/keep.conf"
report --write-topology "$tmp/out/keep.conf" --nodes 'x[1-3]'; rc=$?
[ $rc -eq 2 ] && [ "$(cat "$tmp/out/keep.conf")" = precious ] &&
  grep -q "$tmp/out/keep.conf not written: none of the 14 nodes the records measured (m\[1-6\],n\[1-8\]) is known to Slurm (--nodes x\[1-3\]).*--nodes HOSTLIST" "$tmp/err"
ok $? "no node known: refused (exit $rc), the file untouched, the fix named"; diag < "$tmp/err"
report --write-topology "$tmp/out/keep.yaml" --nodes 'n[1-'; rc=$?
[ $rc -eq 2 ] && [ ! -e "$tmp/out/keep.yaml" ] && grep -q -- "--nodes: " "$tmp/err"; ok $? "a bad --nodes hostlist: exit 2, nothing written"

# --- scontrol: asked when --nodes is not given, bounded, never required
cat > "$tmp/scontrol" <<'EOS'
#!/bin/sh
[ "$*" = "show nodes -o" ] || exit 3
for i in 1 2 3 4 5 6 7 8; do echo "NodeName=n$i Arch=x86_64 CoresPerSocket=1 CPUAlloc=0 State=IDLE"; done
EOS
printf '#!/bin/sh\necho "slurm_load_node error: Unable to contact slurm controller" >&2\nexit 1\n' > "$tmp/scontrol-down"
printf '#!/bin/sh\nexec sleep 60\n' > "$tmp/scontrol-hang"
chmod +x "$tmp"/scontrol*
report --write-topology "$tmp/out/s.conf" --scontrol "$tmp/scontrol"; rc=$?
[ $rc -eq 0 ] && ! grep -q 'm[0-9]' "$tmp/out/s.conf" && grep -qx 'SwitchName=top2 Switches=leaf\[3-4\]' "$tmp/out/s.conf" && ! grep -q top1 "$tmp/out/s.conf" &&
  grep -q "warning: 6 nodes Slurm does not know ($tmp/scontrol show nodes -o) left out of $tmp/out/s.conf: m\[1-6\]; 3 switches" "$tmp/err"
ok $? "scontrol show nodes -o names n[1-8]: the m fabric is left out, named"; diag < "$tmp/err"
report --write-topology "$tmp/out/s2.conf" --scontrol "$tmp/scontrol-down"; rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/out/s2.conf" "$tmp/out/t.conf" && grep -q "warning: .*exited with status 1: the node names in $tmp/out/s2.conf are not checked" "$tmp/err"
ok $? "scontrol fails: written unchecked, and said"
report --write-topology "$tmp/out/s3.conf" --scontrol "$tmp/nowhere/scontrol"; rc=$?
[ $rc -eq 0 ] && cmp -s "$tmp/out/s3.conf" "$tmp/out/t.conf" && grep -q "note: $tmp/nowhere/scontrol cannot be run" "$tmp/err"
ok $? "no scontrol: written unchecked, and said"
start=$(date +%s)
report --write-topology "$tmp/out/s4.conf" --scontrol "$tmp/scontrol-hang"; rc=$?
took=$(( $(date +%s) - start ))
[ $rc -eq 0 ] && [ $took -le 20 ] && grep -q "stopped after 10 s" "$tmp/err" && cmp -s "$tmp/out/s4.conf" "$tmp/out/t.conf"
ok $? "a hanging scontrol is stopped after 10 s (took $took s)"

# --- options
"$bin" report --records "$tmp/rec" --topology-format block > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && grep -q "go with --write-topology" "$tmp/err"; ok $? "--topology-format alone: exit 2"
"$bin" report --records "$tmp/rec" --write-topology "$tmp/out/x.conf" --topology-format ring > /dev/null 2> "$tmp/err"; rc=$?
[ $rc -eq 2 ] && [ ! -e "$tmp/out/x.conf" ]; ok $? "--topology-format ring: exit 2"
"$bin" report --help | grep -q -- "--topology-format FMT" && "$bin" report --help | grep -q -- "--nodes HOSTLIST"
ok $? "--help names the options"

tap_end
