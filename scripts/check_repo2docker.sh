#!/usr/bin/env bash
# Check that repo2docker accepts this repository, with repo2docker's own code (no Docker needed):
# install it in a throwaway virtual environment, let it read the committed tree's environment
# files (`--no-build --debug` prints the Dockerfile it would build) and check what it picked.
# Usage: scripts/check_repo2docker.sh [repo2docker version]   (needs network access to PyPI)
set -euo pipefail
cd "$(dirname "$0")/.."
version="${1:-2026.4.0}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet "jupyter-repo2docker==$version"
git archive --format=tar HEAD --prefix=repo/ | tar -x -C "$work"
"$work/venv/bin/repo2docker" --no-build --debug "$work/repo" > "$work/out.txt" 2>&1
grep -q "Building conda environment for python=$(sed 's/python-//' runtime.txt)" "$work/out.txt"
grep -q 'pip install --no-cache-dir -r "requirements.txt"' "$work/out.txt"
echo "repo2docker $version accepts the repository: Python $(sed 's/python-//' runtime.txt)" \
  "from runtime.txt, packages from requirements.txt"
