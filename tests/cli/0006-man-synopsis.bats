#!/usr/bin/env bats
# Every tool's man page: a SYNOPSIS identical to the usage lines of --help,
# an EXIT STATUS section that lists the statuses --help names, and EXAMPLES.

load helper

TOOLS=(tokenize train-bpe train-wordpiece bleu pretrain finetune translate generate)

# the SYNOPSIS of a man page as plain text, one usage per line
synopsis() {
  sed -n '/^\.SH SYNOPSIS/,/^\.SH /p' "$1" | sed '1d;$d' |
    sed -e 's/\\f[BIR]//g' -e 's/\\-/-/g' -e 's/^\.B //' -e 's/^\.br$/@@/' |
    tr '\n' ' ' | sed -e 's/ *@@ */\n/g' -e 's/  */ /g' -e 's/ $//'
}

@test "every tool: the man page's SYNOPSIS is the usage of --help" {
  for t in "${TOOLS[@]}"; do
    want="$("$NLPIPE_BIN/$t" --help | sed -n -e 's/^Usage: //p' -e 's/^  or:  //p')"
    got="$(synopsis "$NLPIPE_TOP/man/man1/$t.1")"
    [ "$got" = "$want" ] || { printf '%s:\n  man:  %s\n  help: %s\n' "$t" "$got" "$want"; false; }
  done
}

@test "every man page: one date, and the version --version prints" {
  dates="$(for f in "$NLPIPE_TOP"/man/man1/*.1; do sed -n '1s/^\.TH [^ ]* [0-9] "\([^"]*\)".*/\1/p' "$f"; done | sort -u)"
  [ "$(wc -l <<<"$dates")" -eq 1 ] || { echo "dates: $dates"; false; }
  for t in "${TOOLS[@]}"; do
    v="$("$NLPIPE_BIN/$t" --version | sed 's/.* //')"
    head -1 "$NLPIPE_TOP/man/man1/$t.1" | grep -qF "\"nlpipe $v\"" || { echo "$t: $(head -1 "$NLPIPE_TOP/man/man1/$t.1") vs $v"; false; }
  done
}

@test "every tool: the man page has EXIT STATUS, with each status --help names, and EXAMPLES" {
  for t in "${TOOLS[@]}"; do
    page="$NLPIPE_TOP/man/man1/$t.1"
    grep -q '^\.SH EXIT STATUS' "$page" || { echo "$t: no EXIT STATUS"; false; }
    grep -q '^\.SH EXAMPLES' "$page" || { echo "$t: no EXAMPLES"; false; }
    exits="$(sed -n '/^\.SH EXIT STATUS/,/^\.SH /p' "$page")"
    for s in $("$NLPIPE_BIN/$t" --help | grep -oE '\b[0-3] (ok|success|runtime|usage|unreadable|bad|I/O)' | cut -c1 | sort -u); do
      grep -qE "^(\.TP|\.B|\.IP)? *\\\\?(fB)?$s(\\\\fR)?\b|^$s\b" <<<"$exits" || { echo "$t: status $s missing from EXIT STATUS"; false; }
    done
  done
}
