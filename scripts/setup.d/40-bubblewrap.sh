#!/usr/bin/env bash
# Debian's bubblewrap (`bwrap`) for the sandboxed stdio servers (toolhost.sandbox) and their tests
# (tests/upstream/test_sandbox.py). Idempotent: nothing happens when bwrap is already on PATH.
if ! command -v bwrap >/dev/null 2>&1; then
  if [ "$(id -u)" != 0 ]; then
    echo "bubblewrap is missing: run as root, or: sudo apt-get install -y bubblewrap" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends bubblewrap >/dev/null
fi
