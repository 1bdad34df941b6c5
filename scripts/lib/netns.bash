# shellcheck shell=bash
# The test cluster's network namespace, sourced by scripts/cluster (docs/testing.md, "The network").
#
# Every process of the test cluster, and every test, demo and benchmark that talks to it, runs in
# a network namespace of this checkout's own: loopback, and (with a real node) the cluster's own
# bridge in 198.18.0.0/15, with no default route and no route off this machine. A packet to any
# other address fails at once with "network unreachable": KWOK runs exec'd commands on this
# machine, so without the namespace a `wget` of a fake pod IP would leave it.
#
# Needs: NETNS_NAME, NETNS_PATH (set below from STATE), log and die.

# The one range the cluster's addresses come from (RFC 2544, set aside for network tests).
NETWORK_TEST_RANGE="198.18.0.0/15"

netns_names() { # netns_names STATE: sets NETNS_NAME and NETNS_PATH for the checkout of STATE
  NETNS_NAME="pando-test-$(printf '%s' "$1" | sha256sum | cut -c1-10)"
  NETNS_PATH="/run/netns/$NETNS_NAME"
}

netns_exists() { [[ -e "$NETNS_PATH" ]] && ip netns list 2>/dev/null | grep -qw "$NETNS_NAME"; }

# True if this process already runs in the cluster's namespace.
netns_inside() {
  netns_exists || return 1
  [[ "$(stat -L -c %i /proc/self/ns/net)" == "$(stat -L -c %i "$NETNS_PATH")" ]]
}

# ns CMD...: runs CMD in the cluster's namespace (directly when already inside). nsenter execs CMD
# in place, so `ns BINARY &` leaves $! the PID of BINARY itself.
ns() {
  if netns_inside; then
    "$@"
  else
    nsenter --net="$NETNS_PATH" -- "$@"
  fi
}

netns_require_tools() {
  command -v ip >/dev/null 2>&1 || die "\`ip\` (iproute2) is missing: run scripts/setup"
  command -v nsenter >/dev/null 2>&1 || die "\`nsenter\` (util-linux) is missing: run scripts/setup"
  if [[ $(id -u) -ne 0 ]]; then
    die "the test cluster runs in a network namespace of its own, and making one needs root: \
run scripts/cluster as root (or under sudo)"
  fi
}

# Makes the namespace, fresh: loopback up, IPv6 off for every interface made in it later (the real
# node's bridge and veths), so that the only IPv6 route is loopback's.
netns_create() {
  netns_require_tools
  if netns_exists; then
    netns_delete
  fi
  log "creating network namespace $NETNS_NAME (loopback only; no route off this machine)"
  ip netns add "$NETNS_NAME" ||
    die "ip netns add $NETNS_NAME failed; this needs root with CAP_SYS_ADMIN"
  ip -n "$NETNS_NAME" link set lo up || die "could not bring up loopback in $NETNS_NAME"
  nsenter --net="$NETNS_PATH" -- sh -c \
    'echo 1 >/proc/sys/net/ipv6/conf/default/disable_ipv6' ||
    die "could not switch off IPv6 for new interfaces in $NETNS_NAME"
  printf '%s\n' "$NETNS_NAME" >"$STATE/netns"
  netns_check_routes || die "the new namespace $NETNS_NAME has routes it should not (above)"
}

# PIDs of the processes in the namespace, less this script and its ancestors (a shell inside the
# namespace that runs `scripts/cluster down` must survive it).
netns_foreign_pids() {
  local keep=" " pid=$$
  while [[ -n "$pid" && "$pid" != 0 && "$pid" != 1 ]]; do
    keep+="$pid "
    pid="$(awk '{print $4}' "/proc/$pid/stat" 2>/dev/null)" || break
  done
  ip netns pids "$NETNS_NAME" 2>/dev/null | while read -r pid; do
    [[ "$keep" == *" $pid "* ]] || echo "$pid"
  done
}

# Ends what still runs in the namespace (SIGTERM, SIGKILL after 10 s), then removes it.
netns_delete() {
  netns_exists || { rm -f "$STATE/netns"; return 0; }
  local pids start=$SECONDS
  pids="$(netns_foreign_pids | tr '\n' ' ')"
  if [[ -n "${pids// }" ]]; then
    log "ending what still runs in $NETNS_NAME: $pids"
    # shellcheck disable=SC2086 # one PID a word
    kill -TERM $pids 2>/dev/null || true
    while [[ -n "$(netns_foreign_pids)" ]]; do
      if ((SECONDS - start > 10)); then
        pids="$(netns_foreign_pids | tr '\n' ' ')"
        log "still running after 10 s, SIGKILL: $pids"
        # shellcheck disable=SC2086
        kill -KILL $pids 2>/dev/null || true
        sleep 0.5
        break
      fi
      sleep 0.2
    done
  fi
  ip netns del "$NETNS_NAME" 2>/dev/null || log "warning: could not delete network namespace $NETNS_NAME"
  rm -f "$STATE/netns"
  log "network namespace $NETNS_NAME removed"
}

# True for an IPv4 prefix ADDR/LEN inside 198.18.0.0/15.
in_test_range() {
  local addr="${1%/*}" len=32
  [[ "$1" == */* ]] && len="${1#*/}"
  [[ "$addr" =~ ^198\.(18|19)\.[0-9]+\.[0-9]+$ ]] && ((len >= 15))
}

# Checks, from inside the namespace, that its routes reach nothing but loopback and 198.18.0.0/15:
# no default route, nothing routed through another interface. Prints each route that breaks the
# rule. (tests/tests/all/control_plane.rs asserts the same from a test process, and that a connect to
# an address off the machine fails with "network unreachable".)
netns_check_routes() {
  local bad=0 line type dst dev
  while read -r line; do
    [[ -n "$line" ]] || continue
    read -r type dst dev <<<"$(awk '{
      t = "unicast"; i = 1
      if ($1 ~ /^(local|broadcast|multicast|unreachable|blackhole|prohibit|throw|anycast|unicast)$/) { t = $1; i = 2 }
      d = ""; for (j = i; j <= NF; j++) if ($j == "dev") d = $(j + 1)
      print t, $i, (d == "" ? "-" : d)
    }' <<<"$line")"
    case "$type" in
      unreachable|blackhole|prohibit) continue ;; # routes that drop are what we want
    esac
    [[ "$dev" == lo ]] && continue
    if [[ "$dst" != default ]] && in_test_range "$dst"; then continue; fi
    printf '[cluster]   route off the test network: %s\n' "$line" >&2
    bad=1
  done < <(ns ip -o -4 route show table all; ns ip -o -6 route show table all)
  return "$bad"
}

# The verb `check-netns`: this process is in the cluster's namespace, and its routes are as above.
netns_check() {
  netns_exists || die "the test cluster's network namespace $NETNS_NAME does not exist: start the \
cluster with scripts/cluster up"
  netns_inside || die "this process is not inside the test cluster's network namespace \
$NETNS_NAME: run it as \`scripts/cluster exec -- COMMAND\`"
  netns_check_routes || die "the namespace $NETNS_NAME has a route off the test network (above); \
restart the cluster: scripts/cluster down && scripts/cluster up"
  log "inside $NETNS_NAME: loopback and $NETWORK_TEST_RANGE only, no route off this machine"
}

# The verb `exec`: runs a command in the namespace, with cargo offline (there is no registry there;
# scripts/setup fetched every crate) and PANDO_TEST_NETNS naming the namespace for the tests' guard.
netns_exec() {
  [[ "${1:-}" == "--" ]] && shift
  (($# > 0)) || die "usage: scripts/cluster exec [--] COMMAND [ARGS...]"
  netns_exists || die "the test cluster is not running, so its network namespace does not exist: \
start it with scripts/cluster up"
  export PANDO_TEST_NETNS="$NETNS_PATH" CARGO_NET_OFFLINE=true
  if netns_inside; then
    exec "$@"
  fi
  exec nsenter --net="$NETNS_PATH" -- "$@"
}
