#!/usr/bin/env bash
# Regenerates the README's pictures from the pages as they are now, in headless Chromium
# (/usr/bin/chromium through playwright-core; nothing is downloaded):
#   docs/status-page.png  the status page, attach mode, on fixture 03 (the historical bug state)
#   docs/fleet-page.png   the fleet page over simulated provers
# Each is written by the browser test that drives that page, after its assertions pass, so a
# picture is never taken of a page that is wrong. Usage: docs/screenshots.sh [status|fleet]
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x /usr/bin/chromium ] || { echo "docs/screenshots.sh: needs /usr/bin/chromium (apt-get install chromium)" >&2; exit 1; }
npm run --silent build
which=${1:-all}
if [ "$which" = all ] || [ "$which" = status ]; then
  UPDATE_SCREENSHOT=1 npx jest test/e2e/status-page.test.ts -t 'fixture 03: both workers read IDLE' --maxWorkers=1
fi
if [ "$which" = all ] || [ "$which" = fleet ]; then
  UPDATE_SCREENSHOT=1 npx jest test/e2e/fleet-scale.test.ts --maxWorkers=1
fi
git status --short docs/status-page.png docs/fleet-page.png
