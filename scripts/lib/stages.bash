# scripts/lib/stages.bash: time the stages of a run (wall and CPU) and print them as a table.
#
#   stage NAME CMD...          run CMD as stage NAME in the foreground; its exit status is CMD's
#   stage_bg NAME CMD...       start CMD as stage NAME in the background (stage_wait collects it)
#   stage_wait NAME            wait for a background stage; its exit status is the stage's
#   stage_table                print every stage recorded so far
#
# Rows go to $PANDO_STAGE_LOG (tab-separated: name, start in s from the run's start, wall s, user
# CPU s, system CPU s, exit status), so that a script that runs another (.ci/run runs scripts/test)
# prints one table of both. CPU is what the stage's own processes used (bash's `times` in the
# stage's subshell), not the machine's: the test cluster's daemons are counted in no stage, and
# two stages that overlap each count only their own.
# Needs: step (prints a heading).

: "${PANDO_STAGE_LOG:=}"
if [[ -z "$PANDO_STAGE_LOG" ]]; then
  PANDO_STAGE_LOG="$(mktemp -t pando-stages.XXXXXX)"
  PANDO_STAGE_EPOCH="$EPOCHREALTIME"
  export PANDO_STAGE_OWNER=$$
fi
: "${PANDO_STAGE_EPOCH:=$EPOCHREALTIME}"
export PANDO_STAGE_LOG PANDO_STAGE_EPOCH
declare -A STAGE_PIDS=()

_stage_body() { # _stage_body NAME CMD...: runs in the stage's own subshell
  local name="$1" start rc times_file="$PANDO_STAGE_LOG.times.$BASHPID"
  shift
  start="$EPOCHREALTIME"
  # Not `"$@" || rc=$?`: inside a `||` bash ignores errexit in every function the stage calls, so
  # a failing first command of a multi-command stage would go unnoticed. Callers keep `stage` out
  # of `||` and `&&` lists for the same reason.
  set +e
  (
    set -e
    "$@"
  )
  rc=$?
  set -e
  # `times` prints this shell's CPU, then its children's ("0m1.234s 0m0.567s"), which is the
  # stage's. It must run in this shell itself (a pipe or `$(…)` would fork a shell that has used
  # nothing), so it writes to a file.
  times >"$times_file"
  awk -v n="$name" -v e="$PANDO_STAGE_EPOCH" -v s="$start" -v now="$EPOCHREALTIME" -v rc="$rc" '
    NR == 2 {
      split($0, f, " ")
      for (i = 1; i <= 2; i++) { split(f[i], p, "m"); sub("s", "", p[2]); t[i] = p[1] * 60 + p[2] }
      printf "%s\t%.0f\t%.1f\t%.1f\t%.1f\t%s\n", n, s - e, now - s, t[1], t[2], rc
    }' "$times_file" >>"$PANDO_STAGE_LOG"
  rm -f "$times_file"
  return "$rc"
}

stage() {
  local name="$1"
  shift
  step "[stage] $name"
  (_stage_body "$name" "$@")
}

stage_bg() {
  local name="$1"
  shift
  step "[stage, in the background] $name"
  (_stage_body "$name" "$@") &
  STAGE_PIDS[$name]=$!
}

stage_wait() {
  local name="$1" pid="${STAGE_PIDS[$1]:-}"
  [[ -n "$pid" ]] || return 0
  unset "STAGE_PIDS[$name]"
  wait "$pid"
}

stage_table() {
  [[ -s "$PANDO_STAGE_LOG" ]] || return 0
  local total
  total="$(awk -v e="$PANDO_STAGE_EPOCH" -v now="$EPOCHREALTIME" 'BEGIN { print now - e }')"
  {
    printf '\n==> stages (wall and CPU in seconds; CPU is the stage'\''s own processes, user + system)\n'
    awk -F'\t' -v total="$total" '
      BEGIN { printf "%-34s %7s %8s %8s %6s\n", "stage", "start", "wall", "CPU", "exit" }
      { printf "%-34s %7d %8.1f %8.1f %6s\n", $1, $2, $3, $4 + $5, $6; cpu += $4 + $5 }
      END { printf "%-34s %7s %8.1f %8.1f\n", "the whole run", "", total, cpu }
    ' "$PANDO_STAGE_LOG"
  } >&2
}
