#!/usr/bin/env bats
# The library from another program: `make install` into a scratch DESTDIR,
# then examples/encode.c built against the installed tree alone (nlpipe.h
# and libnlpipe.a found through the installed nlpipe.pc), as C and as C++.

load helper

@test "make install DESTDIR: examples/encode.c builds as C and C++ against the installed tree and encodes a string" {
  d="$BATS_TEST_TMPDIR/root"
  # the tree this suite tests (build/ or, under make asan, build/asan/)
  build="$(dirname "${NLPIPE_UNITS:-$NLPIPE_TOP/build/tests}")"
  run make -C "$NLPIPE_TOP" --no-print-directory install DESTDIR="$d" PREFIX=/usr BUILD="$build" \
    BINDIR="$NLPIPE_BIN" TOOLDIR="$NLPIPE_TOOLS"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ -f "$d/usr/include/nlpipe/nlpipe.h" ] && [ -f "$d/usr/lib/libnlpipe.a" ]
  ! grep -qw _Noreturn "$d/usr/include/nlpipe/base/err.h" || grep -q 'define NLP_NORETURN' "$d/usr/include/nlpipe/base/err.h"
  flags="$(PKG_CONFIG_PATH="$d/usr/lib/pkgconfig" pkg-config --define-variable=prefix="$d/usr" --cflags --libs nlpipe)"
  san=()
  [ "${NLPIPE_ASAN:-}" != 1 ] || san=(-fsanitize=address,undefined)
  cd "$BATS_TEST_TMPDIR"
  run cc -std=c11 -Wall -Wextra -Werror "${san[@]}" "$NLPIPE_TOP/examples/encode.c" $flags -o encode
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  run c++ -std=c++11 -Wall -Wextra -Werror "${san[@]}" -x c++ "$NLPIPE_TOP/examples/encode.c" -x none $flags -o encode++
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  G="$(ref_path vectors/tokenize/gpt2)"
  for e in ./encode ./encode++; do
    run_split "$e" "$G" "Hello world"
    [ "$status" -eq 0 ] || { echo "$e: $stderr"; false; }
    [ "$output" = $'15496\tHello\n995\t\xc4\xa0world' ]
  done
  run_split ./encode "$BATS_TEST_TMPDIR/none.json" x
  [ "$status" -ne 0 ]
  [[ "$stderr" == "encode: cannot open '$BATS_TEST_TMPDIR/none.json'"* ]]
}
