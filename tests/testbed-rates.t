#!/usr/bin/env bash
# Link rates on the emulated cluster (TAP): four nodes, two under each of two leaves, every link
# 20 us one way and RATE Mbit/s (bandwidth_mbps), MTU 1500.
#   - the emulator reports the configured rate for every link (fabctl links);
#   - one TCP stream across the spine gets the rate: goodput within 85-102 % of RATE times TCP's
#     share of a frame on the wire, 1448 / 1538 (the upper bound leaves room for rounding only:
#     the emulator must never pass more than the rate);
#   - two streams at once through one leaf uplink share it: together within the same band, and
#     neither locked out (each gets at least 5 % of the rate);
#   - with no rate in the params, the same stream runs well above RATE: the limit is the rate.
# Bounded: a watchdog ends the test after 3 minutes; the testbed is torn down on every exit.
set -uo pipefail
REPO=$(cd "$(dirname "$0")/.." && pwd)
. "$REPO/tests/testbed/lib.sh"
RATE=200
SECONDS_PER_STREAM=3
PORT=7981
export TESTBED_MTU=1500

tb_tap_begin 7 "make testbed" "$TB_FABEMU" "$TB_UDPING"
files=$(mktemp -d /var/tmp/toposcope-rates-files.XXXXXX)
printf 'SwitchName=leaf1 Nodes=rate[1-2]\nSwitchName=leaf2 Nodes=rate[3-4]\nSwitchName=top Switches=leaf[1-2]\n' \
  > "$files/fabric.conf"
printf 'profile: ethernet\nlink_latency_us: 20\nlink_variation: 0\nbandwidth_mbps: %s\n' $RATE > "$files/rated.yaml"
printf 'profile: ethernet\nlink_latency_us: 20\nlink_variation: 0\n' > "$files/unlimited.yaml"
tb_test_up testbed-rates 3 "$files/fabric.conf" "$files/rated.yaml" "up: 4 nodes, every link at $RATE Mbit/s"
trap 'kill "$tb_watchdog" 2>/dev/null; timeout 120 "$TB_DIR/down" >/dev/null 2>&1; rm -rf "$work" "$files"' EXIT

sinks() {
  local n
  for n in rate3 rate4; do
    "$TB_NODE_EXEC" $n "$TB_UDPING" sink --port $PORT --timeout 60 9>&- &
  done
  sleep 0.3
}
stream() {   # FROM TO -> Mbit/s (empty on failure)
  "$TB_NODE_EXEC" "$1" timeout $((SECONDS_PER_STREAM + 30)) "$TB_UDPING" stream "$2" \
    --port $PORT --seconds $SECONDS_PER_STREAM 9>&- | awk '$5 == "mbps" { print $6 }'
}
# GOT within 85-102 % of the goodput RATE allows
at_rate() {
  awk -v g="$1" -v r=$RATE 'BEGIN { e = r * 1448 / 1538; exit !(g != "" && g >= 0.85 * e && g <= 1.02 * e) }'
}

n=$(tb_ctl links | awk -v r=$RATE 'NR > 1 && $5 == r' | wc -l)
[ "$n" -eq 6 ]; ok $? "fabctl links: every one of the 6 links at $RATE Mbit/s ($n)"

sinks
one=$(stream rate1 rate3)
at_rate "$one"; ok $? "one stream rate1 -> rate3 gets the rate: $one Mbit/s (expected $((RATE * 1448 / 1538)))"
stream rate1 rate3 > "$work/s1" &
s1=$!
stream rate2 rate4 > "$work/s2"
wait $s1
a=$(cat "$work/s1") b=$(cat "$work/s2")
sum=$(awk -v a="$a" -v b="$b" 'BEGIN { print a + b }')
at_rate "$sum"; ok $? "two streams through leaf1's uplink share it: $a + $b = $sum Mbit/s"
awk -v a="$a" -v b="$b" -v r=$RATE 'BEGIN { exit !(a >= 0.05 * r && b >= 0.05 * r) }'
ok $? "neither stream locked out (each >= 5% of $RATE Mbit/s)"
drops=$(tb_ctl stats | awk '$1 == "port" { for (i = 3; i < NF; i++) if ($i == "drop_queue") d += $(i + 1) } END { print d + 0 }')
diag "frames dropped by full or early-dropping queues: $drops"

timeout 180 "$TB_DIR/up" "$files/fabric.conf" "$files/unlimited.yaml" > "$work/up2.out" 2>&1
ok $? "up again without any rate"
sinks
free=$(stream rate1 rate3)
awk -v g="$free" -v r=$RATE 'BEGIN { exit !(g != "" && g > 2 * r) }'
ok $? "without a rate the same stream runs above 2 x $RATE Mbit/s: $free Mbit/s"
