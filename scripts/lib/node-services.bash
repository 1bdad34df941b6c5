# shellcheck shell=bash
# The real node's services, sourced by scripts/cluster after node.bash:
#
#   the registry      distribution's `registry` on https://198.18.0.1:5000 (the node's bridge
#                     address, the API server's certificate), basic auth from an htpasswd file,
#                     holding busybox under pando/, an image of its own (O-41: an app's image is pulled with
#                     its pull Secret; a wrong password is a pull failure)
#   local-path        rancher's local-path-provisioner, out of cluster with the admin's
#                     kubeconfig: StorageClass `pando-local` makes a directory under the node's
#                     state for each claim, a real PV it deletes again (R-204, R-206)
#
# Both are test infrastructure, built from Go modules into a cache of their own (the node's
# other parts keep theirs). The registry's user and password are new at every `up`, in
# target/test-cluster/registry.json for the tests.
#
# Needs: log, die, ns, start, alive, wait_for, apply_yaml, run_with_progress, require_go, and
# node.bash's NODE_* settings.

REGISTRY_VERSION="v3.1.2"
LOCAL_PATH_VERSION="v0.0.30"
# Bump when the build commands below change.
NODE_SERVICES_RECIPE="1"
REGISTRY_ADDR="198.18.0.1:5000"
REGISTRY_USER="pando-pull"
# The images pushed there, from the node's own (scripts/lib/images.bash).
REGISTRY_IMAGES=(busybox)

node_services_cache_dir() {
  local hash
  hash="$(echo "registry $REGISTRY_VERSION local-path $LOCAL_PATH_VERSION recipe $NODE_SERVICES_RECIPE" |
    sha256sum | cut -c1-16)"
  echo "$CACHE_ROOT/node-services-$hash"
}

node_services_build() {
  SERVICES_BIN="$(node_services_cache_dir)"
  [[ -x "$SERVICES_BIN/registry" && -x "$SERVICES_BIN/local-path-provisioner" ]] && return 0
  require_go
  mkdir -p "$SERVICES_BIN" "$STATE"
  local started=$SECONDS
  export CGO_ENABLED=0 GOFLAGS="${GOFLAGS:-} -buildvcs=false" GOTOOLCHAIN="${GOTOOLCHAIN:-auto}"
  log "first build of the node's services (registry $REGISTRY_VERSION, local-path-provisioner $LOCAL_PATH_VERSION) into $SERVICES_BIN"
  if [[ ! -x "$SERVICES_BIN/registry" ]]; then
    run_with_progress "go install registry" "$STATE/build-registry.log" \
      env GOBIN="$SERVICES_BIN" go install -v -trimpath -ldflags "-s -w" \
      "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION"
  fi
  if [[ ! -x "$SERVICES_BIN/local-path-provisioner" ]]; then
    run_with_progress "go install local-path-provisioner" "$STATE/build-local-path.log" \
      env GOBIN="$SERVICES_BIN" go install -v -trimpath -ldflags "-s -w" \
      "github.com/rancher/local-path-provisioner@$LOCAL_PATH_VERSION"
  fi
  log "node services build finished in $((SECONDS - started))s"
}

# containerd's view of the registry: its CA, and that it speaks HTTPS (hosts.toml).
node_registry_hosts() {
  local dir="$NODE_DIR/certs.d/$REGISTRY_ADDR"
  mkdir -p "$dir"
  cat >"$dir/hosts.toml" <<TOML
server = "https://$REGISTRY_ADDR"
[host."https://$REGISTRY_ADDR"]
  capabilities = ["pull", "resolve", "push"]
  ca = "$PKI/ca.crt"
TOML
}

registry_answers() {
  # 401 is the answer wanted: it is up, and it asks for credentials.
  [[ "$(ns curl -s -o /dev/null -w '%{http_code}' --max-time 2 --cacert "$PKI/ca.crt" \
    "https://$REGISTRY_ADDR/v2/")" == 401 ]]
}

node_registry_start() {
  local dir="$NODE_DIR/registry" password image
  SERVICES_BIN="$(node_services_cache_dir)"
  mkdir -p "$dir/data"
  command -v htpasswd >/dev/null 2>&1 || die "htpasswd is missing: install apache2-utils (scripts/setup does)"
  password="$(openssl rand -hex 16)"
  htpasswd -nbB "$REGISTRY_USER" "$password" >"$dir/htpasswd" 2>/dev/null
  jq -n --arg server "$REGISTRY_ADDR" --arg username "$REGISTRY_USER" --arg password "$password" \
    '{server: $server, username: $username, password: $password}' >"$STATE/registry.json"
  chmod 600 "$STATE/registry.json"
  cat >"$dir/config.yml" <<YAML
version: 0.1
log: {level: info, formatter: text}
storage:
  filesystem: {rootdirectory: $dir/data}
  delete: {enabled: true}
http:
  addr: $REGISTRY_ADDR
  tls: {certificate: $PKI/server.crt, key: $PKI/server.key}
  debug: {addr: ""}
auth:
  htpasswd: {realm: pando-test, path: $dir/htpasswd}
YAML
  log "starting the registry on https://$REGISTRY_ADDR (user $REGISTRY_USER, target/test-cluster/registry.json)"
  OTEL_TRACES_EXPORTER=none start registry "$SERVICES_BIN/registry" serve "$dir/config.yml"
  STARTED+=(registry)
  wait_for "the registry" 60 registry_answers
  # Pushed from a namespace of containerd's own, then removed there: the node's k8s.io
  # namespace never has these names, so the kubelet pulls them, with the pod's credentials.
  # Each is its own image, not the node's under a second name: the kubelet remembers which
  # credentials pulled an image id, and would then verify (pull again) the node's preloaded
  # copy for every pod without them, from a registry that does not exist.
  images_busybox_rootfs "$dir/rootfs"
  for image in "${REGISTRY_IMAGES[@]}"; do
    images_build_layout "$dir/rootfs" "pando.test/$image:1" \
      '{"config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"], "WorkingDir": "/", "Labels": {"pando.test/from": "the test registry"}}}' \
      "$dir/$image.tar"
    ns "$NODE_BIN/ctr" --address "$NODE_DIR/containerd.sock" -n pando-push images import \
      --no-unpack "$dir/$image.tar" >/dev/null
    ns "$NODE_BIN/ctr" --address "$NODE_DIR/containerd.sock" -n pando-push images tag --force \
      "pando.test/$image:1" "$REGISTRY_ADDR/pando/$image:1" >/dev/null
    ns "$NODE_BIN/ctr" --address "$NODE_DIR/containerd.sock" -n pando-push images push \
      --hosts-dir "$NODE_DIR/certs.d" --user "$REGISTRY_USER:$password" \
      "$REGISTRY_ADDR/pando/$image:1" >"$LOGS/registry-push.log" 2>&1 ||
      { tail -n 20 "$LOGS/registry-push.log" >&2; die "pushing $image to the registry failed"; }
    ns "$NODE_BIN/ctr" --address "$NODE_DIR/containerd.sock" -n pando-push images rm \
      "pando.test/$image:1" "$REGISTRY_ADDR/pando/$image:1" >/dev/null
  done
  rm -rf "$dir/rootfs"
}

local_path_ready() {
  [[ "$(api GET /apis/storage.k8s.io/v1/storageclasses/pando-local 2>/dev/null |
    jq -r '.provisioner // empty')" == rancher.io/local-path ]] && alive local-path
}

node_local_path_start() {
  local dir="$NODE_DIR/local-path"
  SERVICES_BIN="$(node_services_cache_dir)"
  mkdir -p "$dir/volumes"
  sed -e "s#@VOLUMES@#$dir/volumes#g" -e "s#@NODE_LABEL_KEY@#${NODE_LABEL%%=*}#g" \
    -e "s#@NODE_LABEL_VALUE@#${NODE_LABEL#*=}#g" \
    "$ROOT/tests/node/local-path.yaml" >"$dir/objects.yaml"
  apply_yaml "$dir/objects.yaml"
  jq -n --arg path "$dir/volumes" \
    '{nodePathMap: [{node: "DEFAULT_PATH_FOR_NON_LISTED_NODES", paths: [$path]}]}' >"$dir/config.json"
  cat >"$dir/helper-pod.yaml" <<YAML
apiVersion: v1
kind: Pod
metadata: {name: helper-pod}
spec:
  automountServiceAccountToken: false
  containers:
  - name: helper-pod
    image: pando.test/busybox:1
    imagePullPolicy: Never
YAML
  log "starting local-path-provisioner (StorageClass pando-local, volumes under target/test-cluster/node/local-path)"
  start local-path "$SERVICES_BIN/local-path-provisioner" start --config "$dir/config.json" \
    --kubeconfig "$STATE/admin.kubeconfig" --namespace local-path-storage \
    --provisioner-name rancher.io/local-path --helper-image pando.test/busybox:1 \
    --helper-pod-file "$dir/helper-pod.yaml" --configmap-name local-path-config \
    --service-account-name local-path-provisioner
  STARTED+=(local-path)
  wait_for "local-path-provisioner" 60 local_path_ready
}
