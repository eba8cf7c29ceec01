# Headless Chromium from Debian's packages for the web console's browser tests (driven by the
# Python `playwright` package from the test extra, with executable_path=/usr/bin/chromium;
# Playwright's own browser download is never used). Idempotent; needs root on a fresh machine.
if [ ! -x /usr/bin/chromium ]; then
  if [ "$(id -u)" = 0 ]; then
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends chromium fonts-dejavu-core >/dev/null
  else
    echo "scripts/setup.d/30-chromium.sh: /usr/bin/chromium is missing; run as root (apt-get install chromium)" >&2
    return 1
  fi
fi
