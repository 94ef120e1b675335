# helper.bash — loaded by every tests/cli/*.bats file.
# Tools come from $NLPIPE_BIN (set by `make test`/`make asan`), shared data from $SHARED.
: "${NLPIPE_TOP:=$(cd "$BATS_TEST_DIRNAME/../.." && pwd)}"
: "${NLPIPE_BIN:=$NLPIPE_TOP/bin}"
: "${NLPIPE_TOOLS:=$NLPIPE_TOP/tools}"
: "${SHARED:=$NLPIPE_TOP/../shared}"
export NLPIPE_TOP NLPIPE_BIN NLPIPE_TOOLS SHARED
PATH="$NLPIPE_BIN:$PATH"

# skip the test when ../shared is not there
need_shared() { [ -d "$SHARED" ] || skip "shared data not found at $SHARED"; }

# The reference file or directory REL (a path under ../shared, such as
# vectors/tokenize/gpt2): the full one in $SHARED, else the compact copy in
# tests/data/golden (same layout, see its README.md), else the test is skipped.
ref_path() {
  if [ -e "$SHARED/$1" ]; then echo "$SHARED/$1"
  elif [ -e "$NLPIPE_TOP/tests/data/golden/$1" ]; then echo "$NLPIPE_TOP/tests/data/golden/$1"
  else skip "$1 not found in $SHARED or tests/data/golden"
  fi
}

# run a command, keeping stdout and stderr apart: sets $status, $output (stdout) and $stderr
run_split() {
  local e="$BATS_TEST_TMPDIR/stderr.$$"
  run bash -c '"$@" 2>"'"$e"'"' _ "$@"
  stderr="$(cat "$e")"
}

# long options mentioned in a text: one per line, sorted, unique
long_opts() { grep -oE -- '--[a-z][a-z0-9-]*[a-z0-9]' | sort -u; }
