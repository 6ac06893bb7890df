#!/usr/bin/env bash
# Rewrites the generated part of every docs/passes/<pass>.md (heading, summary and options, as
# `qopt --pass-doc=<pass>` prints them) from a built qopt; the hand-written part below each
# page's end marker is kept. A pass without a page is an error naming it: write the page (its
# hand-written part) first. `ctest -R pass-docs` checks the same without changing anything.
#
#   scripts/update-pass-docs.sh [QOPT]     (QOPT: the driver; default $QOPT, else build/bin/qopt)
set -euo pipefail
cd "$(dirname "$0")/.."
QOPT="${1:-${QOPT:-build/bin/qopt}}"
if [ ! -x "$QOPT" ]; then
  echo "update-pass-docs: no qopt at '$QOPT' (build it, or give its path)" >&2
  exit 2
fi
PYTHON=python3
[ -x /usr/bin/python3 ] && PYTHON=/usr/bin/python3
exec "$PYTHON" tests/docs/check_pass_docs.py --update --qopt "$QOPT" --docs docs/passes
