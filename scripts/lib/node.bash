# shellcheck shell=bash
# The real node beside KWOK, sourced by scripts/cluster (docs/testing.md, "The real node").
#
# containerd 2 with runc, the kubelet and kube-proxy (nftables mode) of the control plane's
# multi-call binary, the CNI bridge and host-local plugins on a 198.18.0.0/24 bridge with no
# default route and no masquerade, kube-router enforcing NetworkPolicy (firewall only) and CoreDNS
# as a pod in kube-system. All of it runs in the cluster's network namespace: every rule, route and
# listener of the node is there. What the node changes on the machine itself (a few global
# sysctls, cgroups, mounts, fixed paths) is recorded at `up` and undone at `down`, on every path;
# `scripts/cluster residue` lists anything left.
#
# Needs: STATE, PKI, LOGS, PIDS, CACHE_ROOT, NETNS_PATH, SERVICE_CIDR, log, die, ns, start, api,
# alive, ours, wait_for, write_kubeconfig (scripts/cluster).

NODE_NAME="pando-node-0"
NODE_DIR="$STATE/node"
NODE_BRIDGE="pando0"
NODE_IP="198.18.0.1"
NODE_POD_SUBNET="198.18.0.0/24"
CLUSTER_DNS_IP="198.19.0.10"
# The node is tainted and labelled: only pods that tolerate and select it land there.
NODE_TAINT_KEY="pando.test/real-node"
NODE_LABEL="pando.test/node=real"
# The cgroup (in every hierarchy) under which the kubelet puts its `kubepods`.
NODE_CGROUP_ROOT="/pando-test-node"
CONTAINERD_VERSION="v2.3.7"
KUBE_ROUTER_VERSION="v2.1.0"
# Bump when the node's build commands change.
NODE_BUILD_RECIPE="1"
# The sysctls the kubelet sets machine-wide (they are not per network namespace).
NODE_GLOBAL_SYSCTLS=(vm/overcommit_memory kernel/panic kernel/panic_on_oops)
# Paths the node's parts use whatever they are told; removed at `down` when `up` made them.
NODE_FIXED_PATHS=(/var/lib/kubelet /var/log/containers /var/lib/cni /run/containerd /run/nri)
# The node's processes, in the order `down` stops them.
NODE_COMPONENTS=(local-path registry kube-router kube-proxy kubelet containerd)

# One real node per machine: its fixed ports, paths and cgroups are the machine's.
NODE_OWNER="/run/pando-test-node.owner"
node_claim() {
  local owner pid
  owner="$(cat "$NODE_OWNER" 2>/dev/null || true)"
  if [[ -n "$owner" && "$owner" != "$STATE" && -d "$owner/node" ]]; then
    pid="$(cat "$owner/pids/kubelet.pid" 2>/dev/null || true)"
    if [[ -n "$pid" && -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF "$owner"; then
      die "another checkout runs the real node ($owner): stop it there (scripts/cluster down), or \
start this cluster without the node (PANDO_CLUSTER_NODE=0 scripts/cluster up)"
    fi
    # Its processes are gone (a session ended without `down`): undo what its node left, as its
    # own `down` would, before this one records the machine.
    log "the real node of $owner is gone but left its traces; removing them"
    (
      STATE="$owner" NODE_DIR="$owner/node" NODE_RECORD="$owner/node-machine.record" PIDS="$owner/pids"
      node_down
    )
  fi
  echo "$STATE" >"$NODE_OWNER"
}

# True when another checkout holds the machine's node (its cgroups, sysctls and fixed paths).
node_other_owner() {
  local owner
  owner="$(cat "$NODE_OWNER" 2>/dev/null || true)"
  [[ -n "$owner" && "$owner" != "$STATE" && -d "$owner/node" ]]
}

node_wanted() { [[ "${PANDO_CLUSTER_NODE:-1}" != 0 ]]; }
node_up() { [[ -f "$NODE_DIR/up" ]]; }

node_cache_dir() {
  local hash
  hash="$( { cat "$ROOT/tests/node/coredns/go.mod" "$ROOT/tests/node/coredns/go.sum" \
    "$ROOT/tests/node/coredns/main.go"
    echo "containerd $CONTAINERD_VERSION kube-router $KUBE_ROUTER_VERSION recipe $NODE_BUILD_RECIPE"; } |
    sha256sum | cut -c1-16)"
  echo "$CACHE_ROOT/node-$hash"
}

# The node's binaries: containerd, its runc shim and ctr, kube-router and the test DNS server.
node_build() {
  NODE_BIN="$(node_cache_dir)"
  [[ -x "$NODE_BIN/coredns" && -x "$NODE_BIN/kube-router" && -x "$NODE_BIN/containerd" ]] && return 0
  require_go
  mkdir -p "$NODE_BIN" "$STATE"
  local started=$SECONDS
  export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
  log "first build of the real node's parts (containerd $CONTAINERD_VERSION, kube-router $KUBE_ROUTER_VERSION, CoreDNS) into $NODE_BIN"
  if [[ ! -x "$NODE_BIN/containerd" ]]; then
    run_with_progress "go install containerd" "$STATE/build-containerd.log" \
      env GOBIN="$NODE_BIN" go install -v -trimpath -ldflags "-s -w" \
      "github.com/containerd/containerd/v2/cmd/containerd@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/containerd-shim-runc-v2@$CONTAINERD_VERSION" \
      "github.com/containerd/containerd/v2/cmd/ctr@$CONTAINERD_VERSION"
  fi
  if [[ ! -x "$NODE_BIN/kube-router" ]]; then
    # Test infrastructure only, never shipped: the one version the Go proxy serves here.
    run_with_progress "go install kube-router" "$STATE/build-kube-router.log" \
      env GOBIN="$NODE_BIN" go install -v -trimpath -ldflags "-s -w" \
      "github.com/cloudnativelabs/kube-router/v2/cmd/kube-router@$KUBE_ROUTER_VERSION"
  fi
  if [[ ! -x "$NODE_BIN/coredns" ]]; then
    run_with_progress "go build CoreDNS" "$STATE/build-coredns.log" \
      bash -c "cd '$ROOT/tests/node/coredns' && go build -v -trimpath -ldflags '-s -w' -o '$NODE_BIN/.coredns.$$' . && mv '$NODE_BIN/.coredns.$$' '$NODE_BIN/coredns'"
  fi
  log "node build finished in $((SECONDS - started))s"
}

node_require_packages() {
  local missing=() tool
  for tool in runc iptables nft ipset conntrack jq; do
    command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
  done
  [[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] || missing+=(cni-plugins)
  [[ -x /bin/busybox ]] || missing+=(busybox-static)
  ((${#missing[@]} == 0)) || die "the real node needs ${missing[*]}: run scripts/setup (or start without the node: PANDO_CLUSTER_NODE=0 scripts/cluster up)"
  # One iptables, the nft backend: a call of iptables-legacy registers a table that stays until reboot.
  iptables --version | grep -q nf_tables || die "iptables is not the nft backend: update-alternatives --set iptables /usr/sbin/iptables-nft"
}

# The node's bridge in the cluster's namespace, before the API server starts (it listens there
# too, so that pods reach it through the `kubernetes` Service).
node_network() {
  ns ip link add "$NODE_BRIDGE" type bridge || die "could not make bridge $NODE_BRIDGE"
  ns ip addr add "$NODE_IP/24" dev "$NODE_BRIDGE"
  ns ip link set "$NODE_BRIDGE" up
  # Pod-to-pod traffic on the bridge must pass netfilter, or NetworkPolicy is not enforced
  # between pods of one node; forwarding between the bridge's ports (per namespace).
  ns sh -c 'echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables && echo 1 >/proc/sys/net/ipv4/ip_forward' ||
    die "could not enable bridge netfilter and forwarding in $NETNS_NAME"
}

# "The outside": a test host in a network namespace of its own, linked to the cluster's namespace
# by a veth pair (198.18.1.1/29 there, 198.18.1.2 and .3 here), serving HTTP on port 80. It
# stands in for the internet, which nothing here may reach; CoreDNS names its addresses
# allowed.outside.test (.2) and denied.outside.test (.3). It is outside the pod range, so that a
# policy that excludes the cluster's ranges still admits it.
OUTSIDE_NETNS="$NETNS_NAME-out"
OUTSIDE_IP="198.18.1.2"
# Its second address: `denied.outside.test`, so that an address rule can tell the two apart.
OUTSIDE_IP2="198.18.1.3"
OUTSIDE_GATEWAY="198.18.1.1"
node_outside_up() {
  ip netns del "$OUTSIDE_NETNS" 2>/dev/null || true
  ip netns add "$OUTSIDE_NETNS" || die "could not make the outside host's namespace"
  ip -n "$OUTSIDE_NETNS" link set lo up
  ns ip link add pando-out type veth peer name eth0 netns "$OUTSIDE_NETNS" ||
    die "could not link the outside host to the cluster's namespace"
  ns ip addr add "$OUTSIDE_GATEWAY/29" dev pando-out
  ns ip link set pando-out up
  ip -n "$OUTSIDE_NETNS" addr add "$OUTSIDE_IP/29" dev eth0
  ip -n "$OUTSIDE_NETNS" addr add "$OUTSIDE_IP2/29" dev eth0
  ip -n "$OUTSIDE_NETNS" link set eth0 up
  ip -n "$OUTSIDE_NETNS" route add 198.18.0.0/15 via "$OUTSIDE_GATEWAY"
  mkdir -p "$NODE_DIR/outside-www"
  echo "outside" >"$NODE_DIR/outside-www/index.html"
  nohup nsenter --net="/run/netns/$OUTSIDE_NETNS" -- /bin/busybox httpd -f -p 80 \
    -h "$NODE_DIR/outside-www" </dev/null >"$LOGS/outside.log" 2>&1 9>&- &
  echo $! >"$PIDS/outside.pid"
}

node_outside_down() {
  node_stop_component outside
  ip netns del "$OUTSIDE_NETNS" 2>/dev/null || true
}

# Identities of the node's parts (token file lines) and the API server's client certificate for
# the kubelet's port.
node_tokens() {
  local name
  for name in node kube-proxy kube-router; do
    printf '%s' "$(openssl rand -hex 24)" >"$PKI/$name.token"
  done
  {
    printf '%s,system:node:%s,node-%s,"system:nodes"\n' "$(cat "$PKI/node.token")" "$NODE_NAME" "$NODE_NAME"
    printf '%s,system:kube-proxy,kube-proxy\n' "$(cat "$PKI/kube-proxy.token")"
    printf '%s,pando-test:kube-router,kube-router\n' "$(cat "$PKI/kube-router.token")"
  } >>"$PKI/tokens.csv"
  (
    cd "$PKI"
    openssl req -newkey rsa:2048 -nodes -sha256 -keyout kubelet-client.key -out kubelet-client.csr \
      -subj "/CN=kube-apiserver-kubelet-client/O=system:masters" 2>/dev/null
    printf '%s\n' "extendedKeyUsage=clientAuth" "keyUsage=critical,digitalSignature,keyEncipherment" >client.ext
    openssl x509 -req -sha256 -days 3650 -in kubelet-client.csr -CA ca.crt -CAkey ca.key \
      -CAcreateserial -extfile client.ext -out kubelet-client.crt 2>/dev/null
    rm -f kubelet-client.csr client.ext ca.srl
    chmod 600 ./*.key ./*.token
  )
}

# Records what the node will change on the machine, so that `down` puts it back.
# The record lives beside the node's directory, so that `residue` can compare after `down`.
NODE_RECORD="$STATE/node-machine.record"
node_record_machine() {
  mkdir -p "$NODE_DIR"
  local key path
  {
    for key in "${NODE_GLOBAL_SYSCTLS[@]}"; do
      printf 'sysctl %s %s\n' "$key" "$(cat "/proc/sys/$key")"
    done
    for path in "${NODE_FIXED_PATHS[@]}"; do
      [[ -e "$path" ]] || echo "made $path"
    done
  } >"$NODE_RECORD"
}

node_write_containerd_config() {
  mkdir -p "$NODE_DIR/containerd" "$NODE_DIR/cni/net.d"
  cat >"$NODE_DIR/containerd/config.toml" <<TOML
version = 3
root = "$NODE_DIR/containerd/root"
state = "$NODE_DIR/containerd/state"
disabled_plugins = ["io.containerd.nri.v1.nri", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "$NODE_DIR/containerd.sock"
[ttrpc]
  address = "$NODE_DIR/containerd.sock.ttrpc"
[debug]
  address = ""
[metrics]
  address = ""

[plugins.'io.containerd.cri.v1.runtime']
  # Lowering oom_score_adj needs CAP_SYS_RESOURCE, which this machine's root lacks: without
  # this no sandbox starts ("can't get final child's PID from pipe").
  restrict_oom_score_adj = true
  netns_mounts_under_state_dir = true
  enable_selinux = false
  disable_apparmor = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd]
    default_runtime_name = "runc"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$NODE_DIR/cni/net.d"

[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.registry]
    # The test registry's CA and scheme (scripts/lib/node-services.bash).
    config_path = "$NODE_DIR/certs.d"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "pando.test/pause:1"

[plugins.'io.containerd.grpc.v1.cri']
  stream_server_address = "127.0.0.1"
  stream_server_port = "0"
TOML
  # No masquerade and no default route: a pod reaches 198.18.0.0/15 and nothing else.
  cat >"$NODE_DIR/cni/net.d/10-pando.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "pando-test",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "$NODE_BRIDGE",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "$NODE_DIR/cni/ipam",
        "ranges": [[{"subnet": "$NODE_POD_SUBNET", "rangeStart": "198.18.0.10", "rangeEnd": "198.18.0.250", "gateway": "$NODE_IP"}]],
        "routes": [{"dst": "198.18.0.0/15"}]
      }
    },
    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": false}
  ]
}
JSON
}

node_write_kubelet_config() {
  mkdir -p "$NODE_DIR/kubelet" "$NODE_DIR/kubelet-pki" "$NODE_DIR/pod-logs"
  printf 'nameserver %s\nsearch cluster.local\noptions ndots:5\n' "$CLUSTER_DNS_IP" >"$NODE_DIR/resolv.conf"
  cat >"$NODE_DIR/kubelet.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# This machine has cgroup v1 and swap settings the kubelet refuses by default.
failCgroupV1: false
failSwapOn: false
cgroupDriver: cgroupfs
cgroupRoot: $NODE_CGROUP_ROOT
cgroupsPerQOS: true
enforceNodeAllocatable: [pods]
containerRuntimeEndpoint: unix://$NODE_DIR/containerd.sock
address: $NODE_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $PKI/ca.crt}
authorization:
  mode: AlwaysAllow
clusterDNS: [$CLUSTER_DNS_IP]
clusterDomain: cluster.local
resolvConf: $NODE_DIR/resolv.conf
podLogsDir: $NODE_DIR/pod-logs
# The imported images cannot be pulled again: never collect them.
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%, nodefs.inodesFree: 1%}
registerWithTaints:
- {key: $NODE_TAINT_KEY, value: "true", effect: NoSchedule}
maxPods: 40
serializeImagePulls: false
# An image pulled with a pod's credentials is pulled again, with its own, for a pod that brings
# other credentials or none (O-41): a private image is not anyone's once it is on the node.
imagePullCredentialsVerificationPolicy: NeverVerifyPreloadedImages
protectKernelDefaults: false
makeIPTablesUtilChains: true
shutdownGracePeriod: 0s
YAML
}

node_write_proxy_config() {
  cat >"$NODE_DIR/kube-proxy.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
mode: nftables
clientConnection:
  kubeconfig: $PKI/kube-proxy.kubeconfig
hostnameOverride: $NODE_NAME
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:10256
metricsBindAddress: 127.0.0.1:10249
clusterCIDR: $NODE_POD_SUBNET
nodePortAddresses: [$NODE_IP/32]
# Leave the machine's conntrack settings alone.
conntrack:
  maxPerCore: 0
  min: 0
  tcpEstablishedTimeout: 0s
  tcpCloseWaitTimeout: 0s
YAML
}

node_make_cgroups() {
  local hier
  for hier in /sys/fs/cgroup/*/; do
    [[ -f "$hier/cgroup.procs" ]] || continue
    mkdir -p "$hier${NODE_CGROUP_ROOT#/}" 2>/dev/null || true
  done
}

# As kube-router sees it: its role binding, applied just before, takes a moment to apply.
node_registered() {
  ns curl -sf --max-time 5 --cacert "$PKI/ca.crt" -H "Authorization: Bearer $(cat "$PKI/kube-router.token")" \
    "https://127.0.0.1:$APISERVER_PORT/api/v1/nodes/$NODE_NAME" >/dev/null 2>&1
}

node_ready() {
  api GET "/api/v1/nodes/$NODE_NAME" 2>/dev/null | jq -e \
    '.status.conditions[] | select(.type == "Ready") | .status == "True"' >/dev/null 2>&1
}

coredns_ready() {
  api GET /api/v1/namespaces/kube-system/pods/coredns 2>/dev/null | jq -e \
    '.status.conditions[]? | select(.type == "Ready") | .status == "True"' >/dev/null 2>&1
}

containerd_answers() {
  ns "$NODE_BIN/ctr" --address "$NODE_DIR/containerd.sock" version >/dev/null 2>&1
}

# The objects the node needs: kube-router's role, the `kubernetes` Service's endpoints (the API
# server's address on the bridge), CoreDNS with its Service, ConfigMap and role.
node_apply_objects() {
  local apiserver_port="$1"
  sed -e "s/@NODE_IP@/$NODE_IP/g" -e "s/@APISERVER_PORT@/$apiserver_port/g" \
    -e "s/@CLUSTER_DNS_IP@/$CLUSTER_DNS_IP/g" -e "s/@NODE_NAME@/$NODE_NAME/g" \
    -e "s#@NODE_TAINT_KEY@#$NODE_TAINT_KEY#g" \
    "$ROOT/tests/node/objects.yaml" >"$NODE_DIR/objects.yaml"
  apply_yaml "$NODE_DIR/objects.yaml"
}

node_start() {
  local apiserver_port="$1"
  NODE_BIN="$(node_cache_dir)"
  node_claim
  node_record_machine
  node_make_cgroups
  mkdir -p "$NODE_DIR/images"
  node_write_containerd_config
  node_write_kubelet_config
  write_kubeconfig "$PKI/node.kubeconfig" "system:node:$NODE_NAME" "$PKI/node.token"
  write_kubeconfig "$PKI/kube-proxy.kubeconfig" system:kube-proxy "$PKI/kube-proxy.token"
  write_kubeconfig "$PKI/kube-router.kubeconfig" pando-test:kube-router "$PKI/kube-router.token"
  node_write_proxy_config

  node_registry_hosts
  log "starting containerd (socket target/test-cluster/node/containerd.sock)"
  PATH="$NODE_BIN:$PATH" start containerd "$NODE_BIN/containerd" --config "$NODE_DIR/containerd/config.toml"
  STARTED+=(containerd)
  wait_for "containerd" 60 containerd_answers
  log "making and importing the node's images (busybox, pause, CoreDNS, the gateway, the test server)"
  images_make "$NODE_DIR/images" "$NODE_BIN/coredns"
  images_make_pando "$NODE_DIR/images"
  images_import "$NODE_DIR/containerd.sock" "$NODE_DIR/images"
  node_registry_start

  log "starting the kubelet of $NODE_NAME on $NODE_IP (tainted $NODE_TAINT_KEY, labelled $NODE_LABEL)"
  start kubelet "$STATE/bin/kubelet" --config="$NODE_DIR/kubelet.yaml" \
    --kubeconfig="$PKI/node.kubeconfig" --root-dir="$NODE_DIR/kubelet" \
    --cert-dir="$NODE_DIR/kubelet-pki" --node-ip="$NODE_IP" --hostname-override="$NODE_NAME" \
    --node-labels="$NODE_LABEL" --v=1
  STARTED+=(kubelet)
  start kube-proxy "$STATE/bin/kube-proxy" --config="$NODE_DIR/kube-proxy.yaml" --v=1
  STARTED+=(kube-proxy)
  node_outside_up
  node_apply_objects "$apiserver_port"
  # kube-router finds its node by name at start: after the kubelet has registered it.
  wait_for "node $NODE_NAME registered, as kube-router reads it" 120 node_registered
  node_enforcer_start
  STARTED+=(kube-router)
  wait_for "node $NODE_NAME Ready" 120 node_ready
  wait_for "CoreDNS in kube-system" 120 coredns_ready
  node_local_path_start
  touch "$NODE_DIR/up"
}

# kube-router, firewall only: the NetworkPolicy enforcer.
node_enforcer_start() {
  start kube-router "$NODE_BIN/kube-router" --kubeconfig="$PKI/kube-router.kubeconfig" \
    --hostname-override="$NODE_NAME" --run-firewall=true --run-router=false \
    --run-service-proxy=false --enable-cni=false --enable-pod-egress=false \
    --enable-ipv4=true --enable-ipv6=false --service-cluster-ip-range="$SERVICE_CIDR" \
    --metrics-port=0 --health-port=20244 --cache-sync-timeout=2m
}

# Whether kube-router has synced the policies and answers its health check.
node_enforcer_healthy() { ns curl -sf --max-time 2 http://127.0.0.1:20244/healthz >/dev/null; }

# The enforcer's iptables rules and chains in the cluster's namespace.
node_enforcer_rules() { ns iptables-save 2>/dev/null | grep -E 'KUBE-ROUTER|KUBE-POD-FW|KUBE-NWPLCY' || true; }

# Removes kube-router's firewall: the jumps from the built-in chains, its chains, its ipsets.
# By hand: v2.1.0's `--cleanup-config` says it cleaned the firewall, leaves every rule in
# place, then dies in the service proxy's cleanup (IPVS, which this node does not run).
node_enforcer_flush() {
  local rule chain set
  ns iptables-save -t filter 2>/dev/null | grep -E '^-A (INPUT|FORWARD|OUTPUT) .*-j KUBE-ROUTER-' |
    while read -r rule; do
      # shellcheck disable=SC2086 # the saved rule is iptables' own words, split as it wrote them
      eval "ns iptables -t filter -D ${rule#-A }"
    done
  for chain in $(ns iptables-save -t filter 2>/dev/null |
    sed -nE 's/^:((KUBE-ROUTER|KUBE-POD-FW|KUBE-NWPLCY)[^ ]*) .*/\1/p'); do
    ns iptables -t filter -F "$chain"
  done
  for chain in $(ns iptables-save -t filter 2>/dev/null |
    sed -nE 's/^:((KUBE-ROUTER|KUBE-POD-FW|KUBE-NWPLCY)[^ ]*) .*/\1/p'); do
    ns iptables -t filter -X "$chain"
  done
  for set in $(ns ipset list -n 2>/dev/null | grep -E '^KUBE-' || true); do
    ns ipset destroy "$set" || true
  done
}

# `scripts/cluster enforcer stop|start`: for the test of the health canary's "not enforced"
# verdict (O-43). `stop` ends kube-router and removes its rules (`--cleanup-config`): a stopped
# kube-router leaves its chains in place, which would go on enforcing the last policies seen.
# `start` brings it back and waits until it has synced.
node_enforcer() { # stop|start
  node_up || die "the real node is not up (scripts/cluster up)"
  NODE_BIN="$(node_cache_dir)"
  case "$1" in
    stop)
      node_stop_component kube-router
      node_enforcer_flush
      if node_enforcer_rules | grep -q .; then
        node_enforcer_rules >&2
        die "kube-router's rules (above) are still in the cluster's namespace"
      fi
      log "kube-router stopped and its rules removed: NetworkPolicy is not enforced" ;;
    start)
      if ! alive kube-router; then node_enforcer_start; fi
      wait_for "kube-router synced and healthy" 120 node_enforcer_healthy
      log "kube-router enforces NetworkPolicy again" ;;
    *) die "usage: scripts/cluster enforcer stop|start" ;;
  esac
}

# Processes in the node's cgroups: the containers, wherever their network namespace is.
node_cgroup_pids() {
  local hier
  for hier in /sys/fs/cgroup/*/; do
    [[ -d "$hier${NODE_CGROUP_ROOT#/}" ]] || continue
    find "$hier${NODE_CGROUP_ROOT#/}" -name cgroup.procs -exec cat {} + 2>/dev/null
  done | sort -u
}

node_stop_component() { # NAME
  local pid start=$SECONDS
  [[ -f "$PIDS/$1.pid" ]] || return 0
  pid="$(cat "$PIDS/$1.pid")"
  if ours "$pid"; then
    kill -TERM "$pid" 2>/dev/null || true
    while ours "$pid"; do
      if ((SECONDS - start > 15)); then kill -KILL "$pid" 2>/dev/null || true; sleep 0.5; break; fi
      sleep 0.2
    done
  fi
  rm -f "$PIDS/$1.pid"
}

# Mount points under the node's directory (volumes, snapshots, pod network namespaces, the
# kubelet's root), deepest first.
node_mounts() {
  awk -v d="$NODE_DIR" 'index($5, d) == 1 {print $5}' /proc/self/mountinfo | sort -r || true
}

node_unmount() {
  local mnt
  while read -r mnt; do
    umount -l "$mnt" 2>/dev/null || true
  done < <(node_mounts)
}

# Undoes everything the node did, whatever state a crashed run left: safe to run twice, and
# best effort (it runs in traps): a step that fails does not stop the next.
node_down() {
  node_outside_down
  [[ -d "$NODE_DIR" || -f "$NODE_RECORD" ]] || return 0
  local name pids key value path
  if node_other_owner; then
    # What is the machine's now belongs to another checkout's node: leave it be, and only end
    # this checkout's own processes and directory.
    log "the real node of $(cat "$NODE_OWNER") holds the machine's cgroups, sysctls and paths: leaving them"
    for name in "${NODE_COMPONENTS[@]}" outside; do node_stop_component "$name"; done
    node_unmount
    rm -rf "$NODE_DIR"
    return 0
  fi
  for name in "${NODE_COMPONENTS[@]}"; do
    [[ "$name" == containerd ]] && continue
    node_stop_component "$name"
  done
  # The containers: their processes are in the node's cgroups, not in the cluster's namespace.
  for _ in 1 2 3; do
    pids="$(node_cgroup_pids | tr '\n' ' ' || true)"
    [[ -n "${pids// }" ]] || break
    # shellcheck disable=SC2086
    kill -KILL $pids 2>/dev/null || true
    sleep 0.5
  done
  node_stop_component containerd
  # The runc shims outlive containerd on purpose; theirs name the node's state directory.
  pids="$(pgrep -f "containerd-shim-runc-v2.*" 2>/dev/null | while read -r p; do
    tr '\0' ' ' <"/proc/$p/cmdline" 2>/dev/null | grep -qF "$NODE_DIR" && echo "$p"; done | tr '\n' ' ' || true)"
  # shellcheck disable=SC2086
  [[ -z "${pids// }" ]] || kill -KILL $pids 2>/dev/null || true
  node_unmount
  for path in /sys/fs/cgroup/*/"${NODE_CGROUP_ROOT#/}"; do
    [[ -d "$path" ]] || continue
    find "$path" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  if [[ -f "$NODE_RECORD" ]]; then
    local what
    while read -r what key value; do
      case "$what" in
        sysctl) printf '%s' "$value" >"/proc/sys/$key" 2>/dev/null || log "warning: could not restore $key" ;;
        made) rm -rf "$key" ;;
      esac
    done <"$NODE_RECORD"
  fi
  rm -rf "$NODE_DIR"
  [[ "$(cat "$NODE_OWNER" 2>/dev/null)" == "$STATE" ]] && rm -f "$NODE_OWNER"
  return 0
}

# What of a node is left on this machine, one line each; nothing when `down` did its work.
node_residue() {
  local name path
  for name in kubelet kube-proxy kube-router containerd outside; do
    alive "$name" && echo "process $name ($(cat "$PIDS/$name.pid"))"
  done
  ip netns list 2>/dev/null | grep -qw "$OUTSIDE_NETNS" && echo "network namespace $OUTSIDE_NETNS"
  pgrep -af "containerd-shim-runc-v2" 2>/dev/null | grep -F "$NODE_DIR" | sed 's/^/process /' || true
  node_mounts | sed 's/^/mount /'
  [[ -d "$NODE_DIR" ]] && echo "directory ${NODE_DIR#"$ROOT"/}"
  if node_other_owner; then
    # The cgroups, sysctls and fixed paths are the machine's: another checkout's node has them.
    log "the real node of $(cat "$NODE_OWNER") runs: the machine's cgroups, sysctls and paths are its, not checked"
    return 0
  fi
  for path in /sys/fs/cgroup/*/"${NODE_CGROUP_ROOT#/}"; do
    [[ -d "$path" ]] && echo "cgroup $path"
  done
  if [[ -f "$NODE_RECORD" ]]; then
    local what key value
    while read -r what key value; do
      case "$what" in
        sysctl) [[ "$(cat "/proc/sys/$key")" == "$value" ]] || echo "sysctl $key is $(cat "/proc/sys/$key"), was $value" ;;
        made) [[ -e "$key" ]] && echo "path $key" ;;
      esac
    done <"$NODE_RECORD"
  fi
  return 0
}
