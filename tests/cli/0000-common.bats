#!/usr/bin/env bats
# Conventions every tool shares (shared/CLI.md): --help, --version, usage errors,
# config files, and a man page in step with --help.

load helper

tools() { for s in "$NLPIPE_TOP"/bin/*.c; do [ -e "$s" ] && basename "$s" .c; done; }

@test "every tool: --help on stdout, exit 0, starts with Usage:" {
  for t in $(tools); do
    run_split "$NLPIPE_BIN/$t" --help
    [ "$status" -eq 0 ] || { echo "$t --help: status $status"; false; }
    [ -z "$stderr" ] || { echo "$t --help wrote to stderr"; false; }
    [[ "${lines[0]}" == Usage:\ $t* ]] || { echo "$t --help: first line '${lines[0]}'"; false; }
  done
}

@test "every tool: --version prints 'tool (nlpipe) X.Y.Z'" {
  for t in $(tools); do
    run "$NLPIPE_BIN/$t" --version
    [ "$status" -eq 0 ]
    [[ "$output" =~ ^$t\ \(nlpipe\)\ [0-9]+\.[0-9]+\.[0-9]+$ ]] || { echo "$t: '$output'"; false; }
  done
}

@test "every tool: unknown option is a usage error (exit 2, Try line)" {
  for t in $(tools); do
    run_split "$NLPIPE_BIN/$t" --no-such-option
    [ "$status" -eq 2 ] || { echo "$t: status $status"; false; }
    [[ "$stderr" == *"$t: unrecognized option '--no-such-option'"* ]] || { echo "$t: $stderr"; false; }
    [[ "$stderr" == *"Try '$t --help' for more information."* ]]
    [ -z "$output" ]
  done
}

@test "every tool: a typo of an option gets a 'did you mean', an ambiguous prefix lists its candidates" {
  for t in $(tools); do
    run_split "$NLPIPE_BIN/$t" --vrebose
    [ "$status" -eq 2 ] || { echo "$t: status $status"; false; }
    [[ "$stderr" == *"$t: unrecognized option '--vrebose'; did you mean '--verbose'?"* ]] || { echo "$t: $stderr"; false; }
    run_split "$NLPIPE_BIN/$t" --ver
    [ "$status" -eq 2 ] || { echo "$t: status $status"; false; }
    [[ "$stderr" == *"$t: option '--ver' is ambiguous; possibilities:"*"'--version'"* ]] || { echo "$t: $stderr"; false; }
    [[ "$stderr" == *"'--verbose'"* ]]
  done
  # far from every option: no guess
  run_split "$NLPIPE_BIN/pretrain" --learning-rate 1
  [[ "$stderr" == *"unrecognized option '--learning-rate'"* ]] && [[ "$stderr" != *"did you mean"* ]]
  # a letter off
  run_split "$NLPIPE_BIN/pretrain" --mix-length 1
  [[ "$stderr" == *"did you mean '--max-length'"* ]] || { echo "$stderr"; false; }
  # a config file's key too
  printf 'stpes: 3\n' >"$BATS_TEST_TMPDIR/typo.yaml"
  run_split "$NLPIPE_BIN/pretrain" -c "$BATS_TEST_TMPDIR/typo.yaml" --dump-config
  [ "$status" -eq 3 ]
  [[ "$stderr" == *"'$BATS_TEST_TMPDIR/typo.yaml' line 1: unknown key 'stpes'"*"did you mean 'steps'?"* ]] || { echo "$stderr"; false; }
}

@test "every tool: config file errors name file and line, exit 3" {
  printf 'no-such-key: 1\n' >"$BATS_TEST_TMPDIR/bad.yaml"
  printf 'a: [1\n' >"$BATS_TEST_TMPDIR/broken.yaml"
  for t in $(tools); do
    # one rule for config files: a missing one is exit 3 as well, as a missing -m is
    run_split "$NLPIPE_BIN/$t" -c "$BATS_TEST_TMPDIR/missing.yaml" --dump-config
    [ "$status" -eq 3 ] || { echo "$t -c missing.yaml: status $status"; false; }
    [[ "$stderr" == *"missing.yaml"* ]]
    run_split "$NLPIPE_BIN/$t" -c "$BATS_TEST_TMPDIR/bad.yaml" --dump-config
    [ "$status" -eq 3 ] || { echo "$t: status $status"; false; }
    [[ "$stderr" == *"bad.yaml' line 1: unknown key 'no-such-key'"* ]] || { echo "$t: $stderr"; false; }
    run_split "$NLPIPE_BIN/$t" -c "$BATS_TEST_TMPDIR/broken.yaml" --dump-config
    [ "$status" -eq 3 ]
    [[ "$stderr" == *"broken.yaml' line "* ]]
  done
}

@test "every tool: --dump-config output is a config that reads back to itself" {
  for t in $(tools); do
    run_split "$NLPIPE_BIN/$t" --dump-config
    [ "$status" -eq 0 ] || { echo "$t: $stderr"; false; }
    printf '%s\n' "$output" >"$BATS_TEST_TMPDIR/$t.yaml"
    run "$NLPIPE_BIN/$t" -c "$BATS_TEST_TMPDIR/$t.yaml" --dump-config
    [ "$status" -eq 0 ]
    [ "$output" = "$(cat "$BATS_TEST_TMPDIR/$t.yaml")" ]
  done
}

@test "every tool: man page exists and names the same long options as --help" {
  for t in $(tools); do
    m="$NLPIPE_TOP/man/man1/$t.1"
    [ -f "$m" ] || { echo "no man page for $t"; false; }
    help_opts="$("$NLPIPE_BIN/$t" --help | long_opts)"
    # (mpirun's own options, in the pages of the tools that train, are not ours)
    man_opts="$(sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' "$m" | long_opts |
      grep -vxE -e '--(hostfile|map-by|bind-to|report-bindings|oversubscribe|allow-run-as-root)')"
    if [ "$help_opts" != "$man_opts" ]; then
      echo "$t: --help and man page differ (< help only, > man only):"
      diff <(echo "$help_opts") <(echo "$man_opts") || true
      false
    fi
  done
}

@test "every tool: option errors name the option at fault, in getopt's words" {
  for t in $(tools); do
    # an unknown letter inside a cluster that follows a long option
    run_split "$NLPIPE_BIN/$t" --quiet -Jq
    [ "$status" -eq 2 ] || { echo "$t: status $status"; false; }
    [[ "$stderr" == "$t: invalid option -- 'J'"* ]] || { echo "$t -Jq: $stderr"; false; }
    # built-in long options given an argument they do not take, or missing theirs
    for o in help version quiet verbose dump-config; do
      run_split "$NLPIPE_BIN/$t" --$o=1
      [ "$status" -eq 2 ] || { echo "$t --$o=1: status $status"; false; }
      [[ "$stderr" == "$t: option '--$o' doesn't allow an argument"* ]] || { echo "$t --$o=1: $stderr"; false; }
    done
    run_split "$NLPIPE_BIN/$t" --config
    [ "$status" -eq 2 ]
    [[ "$stderr" == "$t: option '--config' requires an argument"* ]] || { echo "$t --config: $stderr"; false; }
    run_split "$NLPIPE_BIN/$t" -c
    [[ "$stderr" == "$t: option requires an argument -- 'c'"* ]] || { echo "$t -c: $stderr"; false; }
    [ -z "$output" ]
  done
}

@test "every tool: --help, --version and --dump-config fail (exit 1) when standard output cannot be written" {
  [ -w /dev/full ] || skip "no /dev/full"
  for t in $(tools); do
    for o in --help --version --dump-config; do
      run_split bash -c '"$1" "$2" >/dev/full' _ "$NLPIPE_BIN/$t" "$o"
      [ "$status" -eq 1 ] || { echo "$t $o: status $status"; false; }
      [[ "$stderr" == "$t: cannot write to standard output: No space left on device" ]] || { echo "$t $o: $stderr"; false; }
    done
  done
}

@test "every tool: 'key: ~' in a config restores the default or is refused (exit 3), for every option" {
  for t in $(tools); do
    default="$("$NLPIPE_BIN/$t" --dump-config)"
    for key in $(printf '%s\n' "$default" | sed -n 's/^\([a-z0-9-]*\): .*/\1/p'); do
      printf '%s: ~\n' "$key" >"$BATS_TEST_TMPDIR/null.yaml"
      run_split "$NLPIPE_BIN/$t" -c "$BATS_TEST_TMPDIR/null.yaml" --dump-config
      if [ "$status" -eq 0 ]; then
        [ "$output" = "$default" ] || { echo "$t: '$key: ~' did not restore the default"; false; }
      else
        [ "$status" -eq 3 ] || { echo "$t: '$key: ~' exit $status: $stderr"; false; }
        [[ "$stderr" == *"null.yaml' line 1"* ]] || { echo "$t: $stderr"; false; }
      fi
    done
  done
}

@test "train-bpe, train-wordpiece: 'output: ~' in a config writes to standard output (used to crash)" {
  printf 'output: ~\n' >"$BATS_TEST_TMPDIR/o.yaml"
  printf 'low lower lowest\n' >"$BATS_TEST_TMPDIR/c.txt"
  for t in train-bpe train-wordpiece; do
    run_split "$NLPIPE_BIN/$t" -q -c "$BATS_TEST_TMPDIR/o.yaml" --vocab-size 40 --min-frequency 1 "$BATS_TEST_TMPDIR/c.txt"
    [ "$status" -eq 0 ] || { echo "$t: exit $status: $stderr"; false; }
    [[ "$output" == "{"* ]]
  done
}

@test "every tool: --help and the man page give exit status 3 for config files (one rule, documented everywhere)" {
  for t in $(tools); do
    "$NLPIPE_BIN/$t" --help | sed -n '/^Exit status:/,$p' | tr '\n' ' ' | grep -q '3 .*config file (-c)' ||
      { echo "$t --help: no config file under exit status 3"; false; }
    sed -e 's/\\f[BIRP]//g' -e 's/\\-/-/g' "$NLPIPE_TOP/man/man1/$t.1" | sed -n '/^\.SH EXIT STATUS/,/^\.SH [^E]/p' |
      tr '\n' ' ' | grep -q 'configuration file given with -c that is missing' ||
      { echo "$t.1: EXIT STATUS does not give the config-file rule"; false; }
  done
}
