# scripts/lib/build-cache.bash: Cargo's intermediate artifacts kept outside the clone, per toolchain.
#
#   use_build_cache TOOLCHAIN   when PANDO_BUILD_CACHE names a folder, point Cargo's build
#                               directory (`build.build-dir`, CARGO_BUILD_BUILD_DIR) at
#                               $PANDO_BUILD_CACHE/TOOLCHAIN; otherwise do nothing
#   use_workspace_build_cache   the same for the toolchain of $ROOT/rust-toolchain.toml
#   prune_build_cache           remove a toolchain's folder unused for PANDO_BUILD_CACHE_DAYS
#                               (default 7), empty one grown past PANDO_BUILD_CACHE_MAX_GB
#                               (default 40); run once, before any build starts (.ci/run)
#   free_gb                     whole GB free on $ROOT's disk
#   make_room WANT_GB           when $ROOT's disk has less than WANT_GB free, remove the cache's
#                               incremental state (a developer's; CI builds without it), then,
#                               if still short, the whole cache; run after prune_build_cache
#
# Cargo keeps what it compiled (dependencies' rlibs, build scripts' output, incremental state) in
# the build directory and only the final artifacts (binaries, the wasm components) in target/. A
# build directory outside the clone survives a fresh clone: the crates of Cargo.lock compiled by
# the same toolchain with the same flags are fresh there, and Cargo rebuilds the workspace's own
# crates, whose sources a new clone gives new mtimes. Their file names hash the package's path
# relative to the workspace, so a clone in another folder overwrites the last clone's instead of
# adding its own. Nothing else is shared: target/ (the components, the cluster's state) stays in
# the clone, and Cargo's own fingerprints decide what is fresh, so the cache can make a build
# faster but never change what it builds. One folder per toolchain (the pinned stable, the fuzz
# crate's nightly), so that an old toolchain's folder goes as a whole; within one, only old
# versions of crates accumulate. docs/testing.md, "Caches".
# Needs: step, ROOT.

use_build_cache() {
  local toolchain="$1" root="${PANDO_BUILD_CACHE:-}"
  [[ -n "$root" && "$root" != off ]] || return 0
  # A build directory the caller chose is kept; one of this cache's (another toolchain's, set by
  # the script that runs this one) is not.
  [[ -z "${CARGO_BUILD_BUILD_DIR:-}" || "$CARGO_BUILD_BUILD_DIR" == "$root"/* ]] || return 0
  local dir="$root/$toolchain"
  mkdir -p "$dir"
  touch "$dir"
  export CARGO_BUILD_BUILD_DIR="$dir"
  step "build cache: Cargo's build directory is $dir"
}

use_workspace_build_cache() {
  use_build_cache "$(awk -F'"' '/^channel/ {print $2}' "$ROOT/rust-toolchain.toml")"
}

prune_build_cache() {
  local root="${PANDO_BUILD_CACHE:-}" max_gb="${PANDO_BUILD_CACHE_MAX_GB:-40}" days="${PANDO_BUILD_CACHE_DAYS:-7}"
  [[ -n "$root" && "$root" != off && -d "$root" ]] || return 0
  [[ "$max_gb" =~ ^[0-9]+$ && "$days" =~ ^[0-9]+$ ]] ||
    { printf 'error: PANDO_BUILD_CACHE_MAX_GB and PANDO_BUILD_CACHE_DAYS take whole numbers\n' >&2; return 1; }
  local dir kb
  while IFS= read -r dir; do
    if [[ -n "$(find "$dir" -maxdepth 0 -mtime "+$days")" ]]; then
      step "build cache: removing $dir (unused for $days days)"
      rm -rf "$dir"
      continue
    fi
    kb="$(du -sk "$dir" 2>/dev/null | cut -f1)"
    if [[ "$kb" =~ ^[0-9]+$ ]] && ((kb > max_gb * 1024 * 1024)); then
      step "build cache: $dir holds $((kb / 1024 / 1024)) GB, over $max_gb GB; emptying it"
      rm -rf "$dir"
    else
      step "build cache: $dir holds $((${kb:-0} / 1024 / 1024)) GB"
    fi
  done < <(find "$root" -mindepth 1 -maxdepth 1 -type d)
}

# Whole GB free on $ROOT's disk (whatever df printed when it is not a number): n >= WANT here
# is the same test as WANT GB in kB, floor and all.
free_gb() { df -Pk "$ROOT" | awk 'NR == 2 {print ($4 ~ /^[0-9]+$/) ? int($4 / 1024 / 1024) : $4}'; }

# A developer's own builds leave incremental state in the cache (gigabytes per profile); a CI run
# never reads it, since it builds with CARGO_INCREMENTAL=0 and a fresh clone's crates are new to
# it anyway. Removing it costs the next local build its head start, nothing else. The whole cache
# goes only when that is not enough: a cold build is slower, a full disk fails half an hour in.
make_room() {
  local want_gb="$1" root="${PANDO_BUILD_CACHE:-}" have
  [[ -n "$root" && "$root" != off && -d "$root" ]] || return 0
  have="$(free_gb)"
  [[ "$have" =~ ^[0-9]+$ ]] && ((have < want_gb)) || return 0
  step "build cache: $have GB free, under $want_gb GB; removing the cache's incremental state"
  find "$root" -mindepth 2 -maxdepth 4 -type d -name incremental -prune -exec rm -rf {} +
  have="$(free_gb)"
  ((have < want_gb)) || return 0
  step "build cache: $have GB free, still under $want_gb GB; emptying $root"
  rm -rf "${root:?}"/*
}
