#!/usr/bin/env bash
# PostgreSQL server binaries (initdb, pg_ctl, postgres) for the store tests' throwaway cluster
# (tests/postgres.py) and bench/replicas.py. Debian's `postgresql` package; idempotent.
# No system cluster is created or started: the tests run their own on a free loopback port.
if ! compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null && [ -z "${TOOLHOST_PG_BIN:-}" ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "PostgreSQL is missing: run as root, or: sudo apt-get install -y postgresql" >&2
    exit 1
  fi
  mkdir -p /etc/postgresql-common
  if [ ! -e /etc/postgresql-common/createcluster.conf ]; then
    echo "create_main_cluster = false" > /etc/postgresql-common/createcluster.conf
  fi
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
