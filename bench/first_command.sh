#!/usr/bin/env bash
# The README's first command as a new user meets it: a fresh clone of this checkout, an empty
# cache (a new HOME), the command copied verbatim from the README. Prints the seconds until
# /healthz answers and until the README's reference_match batch is scored, against the
# 180 s the README promises (the ratio). With --local it then waits for the background
# llama-server build, checks that the local judge is refused (503 local_judge_starting)
# until then, and times the first batch the local judge scores.
#
#   bash bench/first_command.sh            # on a machine with nothing else running
#   bash bench/first_command.sh --local    # and the build (~6-17 min on 2 cores)
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
wait_local="${1:-}"
work="$(mktemp -d)"
port=8000
git clone -q "$repo" "$work/clone"
export HOME="$work/home"
mkdir -p "$HOME"
unset XDG_CACHE_HOME XDG_DATA_HOME
cd "$work/clone"
# the first ```bash block of the README, on its own free port
first="$(awk '/^```bash$/{getline; print; exit}' README.md)"
if (echo >/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
  echo "port $port is taken: stop what listens there first" >&2
  exit 2
fi
started=$(date +%s.%N)
setsid bash -c "$first" >"$work/first.log" 2>&1 &
pid=$!
trap 'kill -- -$pid 2>/dev/null || true; sleep 2; rm -rf "$work"' EXIT
since() { echo "$(date +%s.%N) - $started" | bc; }
until curl -sf "http://127.0.0.1:$port/healthz" >/dev/null; do
  kill -0 $pid 2>/dev/null || { tail -30 "$work/first.log"; exit 1; }
  sleep 0.5
done
healthz=$(since)
key="$(grep -A1 "it is shown only now:" "$work/first.log" | tail -1)"
batch='{"samples": [
  {"id": "s1", "group_id": "p1", "prompt": "What is 6*7?", "completion": "The answer is 42", "reference": "42"},
  {"id": "s2", "group_id": "p1", "prompt": "What is 6*7?", "completion": "41", "reference": "42"}],
  "judges": ["reference_match"], "detail": "compact"}'
answer="$(curl -sf "http://127.0.0.1:$port/v1/rewards" -H "Authorization: Bearer $key" \
  -H 'content-type: application/json' -d "$batch")"
scored=$(since)
echo "$answer" | python3 -c 'import json,sys; r=json.load(sys.stdin)["results"]; assert [x["reward"] for x in r]==[1.0,0.0], r'
printf '/healthz after %.0f s; reference_match batch scored after %.0f s (%.2f of the 180 s promised)\n' \
  "$healthz" "$scored" "$(echo "$scored / 180" | bc -l)"
curl -s "http://127.0.0.1:$port/readyz" | python3 -c 'import json,sys; print("readyz local_judge:", json.load(sys.stdin)["local_judge"])'
if [ "$wait_local" = "--local" ]; then
  local_batch='{"samples": [{"id": "s1", "prompt": "What is 6*7?", "completion": "42"}],
    "judges": ["local/smollm2-135m"], "timeout_s": 300}'
  code="$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$port/v1/rewards" \
    -H "Authorization: Bearer $key" -H 'content-type: application/json' -d "$local_batch")"
  echo "local judge while it builds: HTTP $code"
  until curl -s "http://127.0.0.1:$port/readyz" | grep -q '"local_judge":"ready"'; do
    kill -0 $pid 2>/dev/null || { tail -30 "$work/first.log"; exit 1; }
    sleep 5
  done
  built=$(since)
  curl -sf "http://127.0.0.1:$port/v1/rewards" -H "Authorization: Bearer $key" \
    -H 'content-type: application/json' -d "$local_batch" | python3 -c \
    'import json,sys; (r,)=json.load(sys.stdin)["results"]; assert r["valid"], r; print("local judge reward:", r["reward"])'
  printf 'llama-server built after %.0f s; the local judge scored its first batch after %.0f s\n' \
    "$built" "$(since)"
  grep -c "local judge: llama-server building" "$work/first.log" | sed 's/^/progress lines: /'
fi
