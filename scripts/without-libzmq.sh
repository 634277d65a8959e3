#!/usr/bin/env bash
# scripts/without-libzmq.sh COMMAND [ARGS...]: runs COMMAND with every libzmq on this host hidden
# from the compiler and the dynamic loader, to prove the product needs none (issue #25). As root it
# enters a private mount namespace (unshare -m) and covers each folder that holds zmq.h or
# libzmq.so* with an overlay whose upper layer whites those files out; the host's files are untouched.
# Without root or unshare it says so and runs COMMAND as it is (CI runs as root).
set -euo pipefail

hidden_names=(-name 'zmq.h' -o -name 'zmq_utils.h' -o -name 'libzmq.so*' -o -name 'libzmq.a' -o -name 'libzmq.pc')
find_libzmq() {
  find /usr /usr/local /opt -xdev \( "${hidden_names[@]}" \) 2>/dev/null || true
}

if [ -z "${KV_DC_RELAY_LIBZMQ_HIDDEN:-}" ]; then
  if [ "$(id -u)" != 0 ] || ! command -v unshare >/dev/null 2>&1; then
    echo "without-libzmq: not root or no unshare: running without hiding libzmq (found: $(find_libzmq | tr '\n' ' '))" >&2
    exec env KV_DC_RELAY_LIBZMQ_HIDDEN=unavailable "$@"
  fi
  # A private namespace: the overlays below exist for COMMAND and its children only.
  exec unshare -m --propagation private env KV_DC_RELAY_LIBZMQ_HIDDEN=1 bash "$0" "$@"
fi

found=$(find_libzmq)
if [ -z "$found" ]; then
  echo "without-libzmq: no libzmq headers or libraries on this host; nothing to hide" >&2
else
  for dir in $(echo "$found" | xargs -n1 dirname | sort -u); do
    layer=$(mktemp -d /tmp/without-libzmq.XXXXXX)
    # The layer lives in a tmpfs of the namespace: it vanishes with it.
    mount -t tmpfs tmpfs "$layer"
    mkdir -p "$layer/upper" "$layer/work"
    for file in $(find "$dir" -maxdepth 1 \( "${hidden_names[@]}" \) -printf '%f\n'); do
      mknod "$layer/upper/$file" c 0 0 # an overlay whiteout: the file is absent in the merged view
    done
    mount -t overlay overlay -o "lowerdir=$dir,upperdir=$layer/upper,workdir=$layer/work" "$dir"
    echo "without-libzmq: hid $(find "$layer/upper" -mindepth 1 -maxdepth 1 -printf '%f ')in $dir" >&2
  done
  left=$(find_libzmq)
  if [ -n "$left" ]; then
    echo "without-libzmq: still visible: $left" >&2
    exit 1
  fi
fi
exec "$@"
