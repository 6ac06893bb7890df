# Sourced by the scripts that configure a build (build.sh, configure-sanitized.sh): moves to the
# checkout, sets LAUNCHER to use ccache where it is installed, and makes ccache's paths relative
# to the checkout so that clones in other folders (CI's) share the compiler cache.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
LAUNCHER=()
if command -v ccache >/dev/null; then LAUNCHER=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache); fi
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"
