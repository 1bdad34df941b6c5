# shellcheck shell=bash
# Container images for the real node, made here from Debian packages, sourced by scripts/cluster.
#
# No registry is reachable from this machine, so each image is an OCI image layout (one
# uncompressed layer, its config, a manifest, index.json naming it) written with tar, sha256sum
# and jq, and imported into containerd with `ctr images import`. The layer's files are sorted,
# owned by root and dated 1970, so the same inputs give the same digests.
#
#   pando.test/busybox:1   busybox-static with its applets: the helpers, the canary, the observer
#   pando.test/pause:1     the pod sandbox: busybox's `sleep`, so that a sandbox waits forever
#   pando.test/coredns:1   the cluster's DNS server (tests/node/coredns)
#   pando.test/gateway:1   Pando's egress gateway (gateway/): /usr/local/bin/pando, user 65532
#   pando.test/server:1    the test server (tests/server/) as the entrypoint, with busybox
#
# The last two are the project's own static binaries (x86_64-unknown-linux-musl), built offline.
#
# Needs: ROOT, log and die.

# A root filesystem of busybox and its applets (a shell, wget, httpd, nc and tar among them).
images_busybox_rootfs() { # images_busybox_rootfs DIR
  local dir="$1" applet
  [[ -x /bin/busybox ]] || die "/bin/busybox is missing: install busybox-static (scripts/setup does)"
  rm -rf "$dir"
  mkdir -p "$dir/bin" "$dir/tmp" "$dir/etc" "$dir/proc" "$dir/sys" "$dir/dev" "$dir/root"
  cp /bin/busybox "$dir/bin/busybox"
  for applet in $(/bin/busybox --list); do
    [[ "$applet" == busybox ]] || ln -sf busybox "$dir/bin/$applet"
  done
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n' >"$dir/etc/passwd"
  printf 'root:x:0:\nnobody:x:65534:\n' >"$dir/etc/group"
  chmod 1777 "$dir/tmp"
}

# images_build_layout ROOTFS NAME CONFIG_JSON OUT_TAR: an OCI image layout of ROOTFS as NAME.
images_build_layout() {
  local rootfs="$1" name="$2" config="$3" out="$4" work
  work="$(mktemp -d)"
  mkdir -p "$work/blobs/sha256"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' -C "$rootfs" -cf "$work/layer.tar" .
  local layer_digest layer_size config_digest config_size manifest_digest manifest_size
  layer_digest="$(sha256sum "$work/layer.tar" | cut -d' ' -f1)"
  layer_size="$(stat -c %s "$work/layer.tar")"
  mv "$work/layer.tar" "$work/blobs/sha256/$layer_digest"
  jq -c --arg diff "sha256:$layer_digest" \
    '. + {architecture: "amd64", os: "linux", rootfs: {type: "layers", diff_ids: [$diff]}}' \
    <<<"$config" >"$work/config.json"
  config_digest="$(sha256sum "$work/config.json" | cut -d' ' -f1)"
  config_size="$(stat -c %s "$work/config.json")"
  mv "$work/config.json" "$work/blobs/sha256/$config_digest"
  jq -nc --arg cd "sha256:$config_digest" --argjson cs "$config_size" \
    --arg ld "sha256:$layer_digest" --argjson ls "$layer_size" '{
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.manifest.v1+json",
      config: {mediaType: "application/vnd.oci.image.config.v1+json", digest: $cd, size: $cs},
      layers: [{mediaType: "application/vnd.oci.image.layer.v1.tar", digest: $ld, size: $ls}]
    }' >"$work/manifest.json"
  manifest_digest="$(sha256sum "$work/manifest.json" | cut -d' ' -f1)"
  manifest_size="$(stat -c %s "$work/manifest.json")"
  mv "$work/manifest.json" "$work/blobs/sha256/$manifest_digest"
  jq -nc --arg md "sha256:$manifest_digest" --argjson ms "$manifest_size" --arg name "$name" \
    --arg tag "${name##*:}" '{
      schemaVersion: 2,
      mediaType: "application/vnd.oci.image.index.v1+json",
      manifests: [{mediaType: "application/vnd.oci.image.manifest.v1+json", digest: $md,
        size: $ms, annotations: {"io.containerd.image.name": $name,
        "org.opencontainers.image.ref.name": $tag}}]
    }' >"$work/index.json"
  printf '{"imageLayoutVersion":"1.0.0"}' >"$work/oci-layout"
  tar --sort=name --owner=0 --group=0 --numeric-owner --mtime='@0' -C "$work" \
    -cf "$out" oci-layout index.json blobs
  rm -rf "$work"
}

# images_make DIR COREDNS: writes DIR/<image>.tar for every image above, and the DNS server's
# image (pando.test/coredns:1) from the binary COREDNS.
images_make() {
  local dir="$1" coredns="$2"
  mkdir -p "$dir"
  images_busybox_rootfs "$dir/busybox-rootfs"
  images_build_layout "$dir/busybox-rootfs" "pando.test/busybox:1" \
    '{"config": {"Env": ["PATH=/bin"], "Cmd": ["/bin/sh"], "WorkingDir": "/"}}' "$dir/busybox.tar"
  images_build_layout "$dir/busybox-rootfs" "pando.test/pause:1" \
    '{"config": {"Env": ["PATH=/bin"], "Entrypoint": ["/bin/sleep", "2147483647"], "WorkingDir": "/"}}' \
    "$dir/pause.tar"
  rm -rf "$dir/busybox-rootfs" "$dir/coredns-rootfs"
  mkdir -p "$dir/coredns-rootfs/etc/coredns"
  cp "$coredns" "$dir/coredns-rootfs/coredns"
  images_build_layout "$dir/coredns-rootfs" "pando.test/coredns:1" \
    '{"config": {"Entrypoint": ["/coredns"], "Cmd": ["-conf", "/etc/coredns/Corefile"], "WorkingDir": "/"}}' \
    "$dir/coredns.tar"
  rm -rf "$dir/coredns-rootfs"
}

# The static target the node's own binaries are built for: no libc in the image to match.
IMAGES_RUST_TARGET="x86_64-unknown-linux-musl"

# images_build_pando OUT: builds the egress gateway (`pando`) and the test server
# (`pando-test-server`) statically and copies them into OUT. Offline: scripts/setup fetched the
# crates. Cargo's output goes to OUT/cargo-build.log.
images_build_pando() {
  local out="$1" target_dir
  mkdir -p "$out"
  target_dir="${CARGO_TARGET_DIR:-$ROOT/target}"
  ! command -v rustup >/dev/null 2>&1 ||
    (cd "$ROOT" && rustup target list --installed 2>/dev/null) | grep -qx "$IMAGES_RUST_TARGET" ||
    die "the Rust target $IMAGES_RUST_TARGET is missing: run scripts/setup (or rustup target add $IMAGES_RUST_TARGET)"
  (cd "$ROOT" && CARGO_NET_OFFLINE=true cargo build --release --locked --target "$IMAGES_RUST_TARGET" \
    -p pando-gateway -p pando-test-server) >"$out/cargo-build.log" 2>&1 ||
    die "building the gateway and the test server for $IMAGES_RUST_TARGET failed: $(tail -n 20 "$out/cargo-build.log")"
  cp "$target_dir/$IMAGES_RUST_TARGET/release/pando" "$target_dir/$IMAGES_RUST_TARGET/release/pando-test-server" "$out/"
}

# images_make_pando DIR: builds the two binaries (images_build_pando) and writes
# DIR/gateway.tar (pando.test/gateway:1) and DIR/server.tar (pando.test/server:1).
images_make_pando() {
  local dir="$1" bin
  bin="$dir/pando-bin"
  mkdir -p "$dir"
  images_build_pando "$bin"
  # The gateway runs as 65532 with a read-only root: nothing in it is written.
  rm -rf "$dir/gateway-rootfs"
  mkdir -p "$dir/gateway-rootfs/usr/local/bin" "$dir/gateway-rootfs/etc" "$dir/gateway-rootfs/tmp" \
    "$dir/gateway-rootfs/proc" "$dir/gateway-rootfs/sys" "$dir/gateway-rootfs/dev"
  cp "$bin/pando" "$dir/gateway-rootfs/usr/local/bin/pando"
  printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/:/sbin/nologin\n' \
    >"$dir/gateway-rootfs/etc/passwd"
  printf 'root:x:0:\nnonroot:x:65532:\n' >"$dir/gateway-rootfs/etc/group"
  chmod 1777 "$dir/gateway-rootfs/tmp"
  images_build_layout "$dir/gateway-rootfs" "pando.test/gateway:1" \
    '{"config": {"User": "65532:65532", "Env": ["PATH=/usr/local/bin"], "Entrypoint": ["/usr/local/bin/pando"], "Cmd": ["egress-gateway", "--listen", ":3128"], "ExposedPorts": {"3128/tcp": {}}, "WorkingDir": "/"}}' \
    "$dir/gateway.tar"
  rm -rf "$dir/gateway-rootfs" "$dir/server-rootfs"
  # busybox beside it, so that a test can exec a shell into the server's container.
  images_busybox_rootfs "$dir/server-rootfs"
  mkdir -p "$dir/server-rootfs/usr/local/bin"
  cp "$bin/pando-test-server" "$dir/server-rootfs/usr/local/bin/pando-test-server"
  images_build_layout "$dir/server-rootfs" "pando.test/server:1" \
    '{"config": {"Env": ["PATH=/usr/local/bin:/bin"], "Entrypoint": ["/usr/local/bin/pando-test-server"], "Cmd": ["--listen", "8080"], "WorkingDir": "/"}}' \
    "$dir/server.tar"
  rm -rf "$dir/server-rootfs" "$bin"
}

# images_import SOCKET DIR: imports every DIR/*.tar into containerd's `k8s.io` namespace.
images_import() {
  local sock="$1" dir="$2" tar
  for tar in "$dir"/*.tar; do
    ns "$NODE_BIN/ctr" --address "$sock" -n k8s.io images import "$tar" >>"$LOGS/image-import.log" 2>&1 ||
      die "importing ${tar##*/} into containerd failed"
  done
}
