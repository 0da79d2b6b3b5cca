#!/bin/sh
# Replays the corpus against the cascade of an older commit (default
# 8a1d3ba, before the gate changes of issue 9) and prints the same table
# as `go test ./internal/cascade -run TestCorpus -v` does for the current
# code. Run from anywhere in the repository:
#
#   internal/cascade/testdata/corpus/before.sh [commit]
set -eu
root=$(git rev-parse --show-toplevel)
rev=${1:-8a1d3ba}
dir=$(mktemp -d)
trap 'git -C "$root" worktree remove --force "$dir" >/dev/null 2>&1 || rm -rf "$dir"' EXIT
git -C "$root" worktree add --detach "$dir" "$rev" >/dev/null 2>&1
cas="$root/internal/cascade"
mkdir -p "$dir/internal/cascade/testdata"
cp -r "$cas/testdata/corpus" "$dir/internal/cascade/testdata/"
cp "$cas/corpus_test.go" "$dir/internal/cascade/"
cp "$cas/testdata/corpus/baseline/glue_8a1d3ba.go.txt" "$dir/internal/cascade/corpus_glue_test.go"
cd "$dir"
go test ./internal/cascade -run 'TestCorpus$' -count=1 -v
