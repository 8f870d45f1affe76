#!/usr/bin/env bash
# make demo: three emulated Kong gateways, the hub with a kong sink for
# each, a KIC fixture pushed with confighubctl, and the live status table.
# Ctrl-C (or q) stops everything this script started and exits 0.
#
# Environment:
#   DEMO_FIXTURE  the configuration to push (default:
#                 testdata/kic-golden/httproute-example__default.yaml)
#   DEMO_FAULTS   1 (default) makes gw-1 slow and gw-2 answer 429 once, so
#                 the table shows APPLYING and BACKOFF; 0 for a clean run
#   DEMO_WATCH    1 (default) runs `status --watch`; 0 prints one table and exits
#   DEMO_KEEP     1 keeps the temporary directory (binaries, logs) at the end
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/confighub-demo.XXXXXX")
PIDS=()
STTY=

cleanup() {
	trap - EXIT INT TERM
	if [ -n "$STTY" ]; then stty "$STTY" 2>/dev/null || true; fi
	for pid in "${PIDS[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${PIDS[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	echo
	if [ "${DEMO_KEEP:-0}" = 1 ]; then
		echo "demo stopped; logs kept in $WORK"
	else
		echo "demo stopped; logs were in $WORK (removed; DEMO_KEEP=1 keeps them)"
		rm -rf "$WORK"
	fi
}
trap cleanup EXIT
# Stopping the demo is what Ctrl-C is for: not a failure.
trap 'exit 0' INT TERM

say() { printf '\033[1m==> %s\033[0m\n' "$*" >&2; }

# wait_for FILE REGEX: wait (up to 60 s) until FILE has a line matching REGEX.
wait_for() {
	for _ in $(seq 1 600); do
		if grep -qE "$2" "$1" 2>/dev/null; then return 0; fi
		sleep 0.1
	done
	echo "timed out waiting for /$2/ in $1:" >&2
	tail -20 "$1" >&2
	exit 1
}

say "building confighub, confighubctl and kong-emulator"
go build -o "$WORK/bin/" ./cmd/confighub ./cmd/confighubctl ./test/kongemu/cmd/kong-emulator
BIN=$WORK/bin

say "starting 3 emulated Kong gateways (an emulator, not Kong)"
"$BIN/kong-emulator" --listen 127.0.0.1:0 --count 3 >"$WORK/gateways.txt" 2>"$WORK/emulator.log" &
PIDS+=($!)
for _ in $(seq 1 600); do
	[ "$(wc -l <"$WORK/gateways.txt")" -ge 3 ] && break
	sleep 0.1
done
mapfile -t GWS <"$WORK/gateways.txt"
[ "${#GWS[@]}" -ge 3 ] || { echo "the emulator did not start:" >&2; cat "$WORK/emulator.log" >&2; exit 1; }

{
	for i in 0 1 2; do
		printf -- '- name: gw-%d\n  kong:\n    address: %s\n  options:\n    timeout: 10s\n    backoff: {initial: 1s, max: 5s}\n' "$i" "${GWS[$i]}"
	done
} >"$WORK/sinks.yaml"

if [ "${DEMO_FAULTS:-1}" = 1 ]; then
	# gw-1 takes 2 s per request; gw-2 answers the first POST /config with
	# 429 Retry-After: 3, as a gateway still loading its previous config.
	curl -fsS -X POST "${GWS[1]}/_emulator/faults" -d '{"latency":"2s"}' >/dev/null
	curl -fsS -X POST "${GWS[2]}/_emulator/faults" \
		-d '{"script":{"method":"POST","path":"/config","steps":[{"status":429,"retry_after":"3"}]}}' >/dev/null
fi

say "starting the hub with a kong sink per gateway"
"$BIN/confighub" --listen 127.0.0.1:0 --metrics-listen 127.0.0.1:0 --data-dir "$WORK/data" \
	--sinks "$WORK/sinks.yaml" >"$WORK/hub.log" 2>&1 &
PIDS+=($!)
wait_for "$WORK/hub.log" 'confighub serving'
ADDR=$(sed -nE 's/.*confighub serving.* listen=([^ ]+).*/\1/p' "$WORK/hub.log" | head -1)
METRICS=$(sed -nE 's/.*metrics serving"? listen=([^ ]+).*/\1/p' "$WORK/hub.log" | head -1)
export CONFIGHUB_ADDR=$ADDR

FIXTURE=${DEMO_FIXTURE:-testdata/kic-golden/httproute-example__default.yaml}

say "pushing $(basename "$FIXTURE") with confighubctl"
"$BIN/confighubctl" push -f "$FIXTURE" --label source=demo

cat >&2 <<EOF2

hub:      $ADDR   (logs: $WORK/hub.log)
metrics:  http://$METRICS/metrics
status page: http://$METRICS/
try in another terminal:
  CONFIGHUB_ADDR=$ADDR go run ./cmd/confighubctl status
  CONFIGHUB_ADDR=$ADDR go run ./cmd/confighubctl config get --sink gw-0
  curl -s http://$METRICS/metrics | grep confighub_sink_state

EOF2

if [ "${DEMO_WATCH:-1}" = 1 ]; then
	say "live status (Ctrl-C or q stops the demo)"
	"$BIN/confighubctl" status --watch &
	WATCH=$!
	PIDS+=("$WATCH")
	if [ -t 0 ]; then
		# Ctrl-C on a terminal signals make too, and make then reports the
		# demo as killed (exit 130) whatever this script does: read Ctrl-C
		# as a key instead, so stopping the demo exits 0.
		STTY=$(stty -g)
		stty intr undef -echo -icanon
		while kill -0 "$WATCH" 2>/dev/null; do
			if IFS= read -rsn1 -t 1 key; then
				case "$key" in $'\x03' | q) break ;; esac
			fi
		done
		# The watch ended by itself (the hub went away): its status is ours.
		kill -0 "$WATCH" 2>/dev/null || wait "$WATCH"
	else
		wait "$WATCH"
	fi
else
	sleep "${DEMO_SETTLE:-6}"
	"$BIN/confighubctl" status
fi
