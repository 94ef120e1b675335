#!/usr/bin/env bats
# The library from another program: `make install` into a scratch DESTDIR,
# then examples/encode.c built against the installed tree alone (nlpipe.h
# and libnlpipe.a found through the installed nlpipe.pc), as C and as C++,
# without MPI (only a program that trains needs it: Libs.private); the
# tools and the plotting scripts installed beside them.

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
  # a program that only encodes text links no MPI; --static adds it (a program that trains)
  [[ " $flags " != *" -lmpi "* ]] || { echo "Libs: $flags"; false; }
  if [ "${NLPIPE_MPI:-0}" = 1 ]; then
    ! readelf -d ./encode | grep -q 'NEEDED.*libmpi' || { readelf -d ./encode | grep NEEDED; false; }
    static="$(PKG_CONFIG_PATH="$d/usr/lib/pkgconfig" pkg-config --define-variable=prefix="$d/usr" --static --libs nlpipe)"
    [[ " $static " == *" -lmpi "* ]] || { echo "--static: $static"; false; }
    [[ "$(PKG_CONFIG_PATH="$d/usr/lib/pkgconfig" pkg-config --variable=mpi_libs nlpipe)" == *-lmpi* ]]
  fi
  run_split ./encode "$BATS_TEST_TMPDIR/none.json" x
  [ "$status" -ne 0 ]
  [[ "$stderr" == "encode: cannot open '$BATS_TEST_TMPDIR/none.json'"* ]]
  # the tools and the plotting scripts, on the PATH of the installed tree
  for t in tokenize train-bpe train-wordpiece bleu pretrain finetune translate generate plot-log plot-attention; do
    [ -x "$d/usr/bin/$t" ] || { echo "not installed: $t"; false; }
    run_split "$d/usr/bin/$t" --help
    [ "$status" -eq 0 ] && [ -n "$output" ] || { echo "$t --help: $status $stderr"; false; }
  done
  [ -f "$d/usr/share/man/man1/pretrain.1" ] && [ -f "$d/usr/share/man/man7/nlpipe.7" ]
  # every tool's page points to the overview, and the overview to every tool
  for t in tokenize train-bpe train-wordpiece bleu pretrain finetune translate generate; do
    grep -q '^\.BR nlpipe (7)' "$d/usr/share/man/man1/$t.1" || { echo "$t.1: no nlpipe(7) in SEE ALSO"; false; }
    grep -q "^\.BR ${t//-/\\\\-} (1)" "$d/usr/share/man/man7/nlpipe.7" || { echo "nlpipe.7: no $t(1)"; false; }
  done
  run make -C "$NLPIPE_TOP" --no-print-directory uninstall DESTDIR="$d" PREFIX=/usr BINDIR="$NLPIPE_BIN"
  [ "$status" -eq 0 ] || { echo "$output"; false; }
  [ ! -e "$d/usr/bin/plot-log" ] && [ ! -e "$d/usr/bin/pretrain" ] && [ ! -e "$d/usr/lib/pkgconfig/nlpipe.pc" ]
  [ ! -e "$d/usr/share/man/man7/nlpipe.7" ]
}
