#!/bin/sh
# Entry point of the qunli image: runs one app (from the first argument or $APP) or one tool.
#   qunli                       the app named by $APP
#   qunli <app> [args…]         ingress | scheduler | cognition | outbound | life-director
#   qunli tool <name> [args…]   node dist/tools/<name>/main.js
set -eu
cd /app

usage() {
  echo "usage: qunli [ingress|scheduler|cognition|outbound|life-director] | qunli tool <name> [args…]" >&2
  exit 64
}

if [ "${1:-}" = "tool" ]; then
  [ $# -ge 2 ] || usage
  name=$2
  shift 2
  [ -f "dist/tools/$name/main.js" ] || { echo "qunli: no tool named '$name'" >&2; exit 64; }
  exec node "dist/tools/$name/main.js" "$@"
fi

app=${1:-${APP:-}}
if [ $# -gt 0 ]; then shift; fi
case "$app" in
  ingress | scheduler | cognition | outbound | life-director) ;;
  *) echo "qunli: unknown app '$app'" >&2; usage ;;
esac
# Node flags per app: the same as `npm run up`'s and the tests' (libs/testing APP_NODE_FLAGS, tools/lib/settings.mjs).
case "$app" in
  scheduler) exec node --max-semi-space-size=64 "dist/apps/$app/src/main.js" "$@" ;;
  *) exec node "dist/apps/$app/src/main.js" "$@" ;;
esac
