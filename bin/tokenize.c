/*
 * tokenize — text to tokens and back, one output line per input line.
 *
 * Encoding reads records (lines, or NUL-terminated with -z) in batches of
 * -B, encodes a batch on -t threads (each with its own tokenizer state),
 * pads it, and writes it in input order: memory is bounded by the batch,
 * not the input. A record longer than LONG_PIECE bytes is read in parts:
 * when the tokenizer allows it (nlp_tokenizer_cuttable) and the output can
 * be written as it comes, it is encoded piece by piece, cut at spaces, so
 * that its memory does not grow with it; otherwise it is held whole up to
 * --max-line-bytes and refused beyond. Decoding (-d) is sequential, one
 * record (at most --max-line-bytes) at a time.
 */
#include "base/err.h"
#include "base/io.h"
#include "base/mem.h"
#include "base/thread.h"
#include "common/cli.h"
#include "common/progress.h"
#include "text/utf8.h"
#include "tok/tokbin.h"
#include "tok/tokfiles.h"

#include <omp.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char usage[] =
    "Usage: tokenize -m TOKENIZER [OPTION]... [FILE]...\n"
    "Tokenize text (one output line per input line), or turn tokens back into text.\n"
    "\n"
    "  -m, --model PATH          tokenizer: tokenizer.json, GPT-2 encoder.json + vocab.bpe,\n"
    "                            HF vocab.json + merges.txt, subword-nmt codes, BERT vocab.txt,\n"
    "                            a sentencepiece .model, or a directory holding one\n"
    "      --cased               a BERT vocab.txt keeps case and accents (default: uncased,\n"
    "                            lowercase and strip accents)\n"
    "  -i, --input FILE          read FILE (repeatable; also: FILE arguments; default\n"
    "                            standard input)\n"
    "  -o, --output FILE         write FILE (default standard output)\n"
    "      --in-place            when -o's directory is read-only but the file is\n"
    "                            writable, write the file in place (not atomically)\n"
    "      --output-format FMT   piece, id (default), bin (binary token stream) or\n"
    "                            subword-nmt (apply-bpe's pieces: '@@' ends a piece that\n"
    "                            does not end its word, characters without a token kept)\n"
    "  -d, --decode              turn ids, pieces or a token stream back into text\n"
    "      --input-format FMT    what -d reads: auto (default: bin if the input starts\n"
    "                            with a token-stream magic, id if its first line is all\n"
    "                            numbers, else piece), id, piece or bin\n"
    "      --special-tokens MODE keep (default): special tokens in the text are matched\n"
    "                            as such; split: their text is tokenized as ordinary text\n"
    "      --add-special-tokens  add the tokenizer's template tokens ([CLS], [SEP]...) (default)\n"
    "      --no-special-tokens   do not add them; with -d, drop special tokens from the text\n"
    "      --pair                each line holds two segments separated by one tab\n"
    "      --max-length N        truncate (and with --padding max, pad) to N tokens (0 = none)\n"
    "      --truncation MODE     longest-first (default), only-first, only-second or none\n"
    "      --padding MODE        none (default), max (to --max-length) or longest (in each batch)\n"
    "      --pad-token TOKEN     padding token (default: the tokenizer's, else [PAD] or <pad>)\n"
    "      --type-ids            append a tab and the token type ids\n"
    "      --attention-mask      append a tab and the attention mask\n"
    "      --eot TOKEN           end-of-text token between documents in bin streams\n"
    "                            (default: <|endoftext|>, </s>, <eos> or [SEP], the first known\n"
    "                            that the template does not add to every record)\n"
    "      --strict              invalid UTF-8 is an error (default: replaced by U+FFFD)\n"
    "  -z, --null-data           records end with NUL, not newline (input and output)\n"
    "      --max-line-bytes N    the longest record held at once (default 16777216 = 16 MiB);\n"
    "                            a longer one is encoded in pieces cut at spaces when the\n"
    "                            tokenizer and output allow it (then N bounds the stretch\n"
    "                            between two places to cut), else it is an error\n"
    "  -B, --batch-size N        records per batch (default 1024)\n"
    "  -t, --threads N           encoding threads (default: all CPUs); output order is kept\n"
    "      --progress            show progress on standard error: share of the input read,\n"
    "                            rate and time left (default: on a terminal)\n"
    "      --no-progress         do not\n"
    "  -c, --config FILE         read options from a YAML file (keys = long option names)\n"
    "      --dump-config         print the effective configuration and exit\n"
    "  -q, --quiet               no warnings\n"
    "  -v, --verbose             more messages: the threads, and at the end the lines,\n"
    "                            tokens, bytes and rate\n"
    "  -h, --help                display this help and exit\n"
    "  -V, --version             output version information and exit\n"
    "\n"
    "Exit status: 0 ok, 1 bad input data or I/O error, 2 usage error, 3 unreadable tokenizer\n"
    "or token stream, or a missing, unreadable or invalid config file (-c).\n";

static const char *const out_fmts[] = {"piece", "id", "bin", "subword-nmt", NULL};
enum { OUT_PIECE, OUT_ID, OUT_BIN, OUT_SNMT };
static const char *const in_fmts[] = {"auto", "id", "piece", "bin", NULL};
enum { IN_AUTO, IN_ID, IN_PIECE, IN_BIN };
static const char *const special_modes[] = {"keep", "split", NULL};
static const char *const trunc_modes[] = {"longest-first", "only-first", "only-second", "none", NULL};
static const char *const pad_modes[] = {"none", "max", "longest", NULL};
enum { PAD_NONE, PAD_MAX, PAD_LONGEST };

static struct {
    const char *model, *output, *pad_token, *eot;
    struct cli_list input;
    int out_fmt, in_fmt, decode, special, add_special, pair, truncation, padding, type_ids, mask, strict, zero, cased,
        in_place, progress;
    long max_length, batch, threads, max_line_bytes;
} o = {
    .output = "-",
    .out_fmt = OUT_ID,
    .add_special = 1,
    .batch = 1024,
    .max_line_bytes = CLI_MAX_LINE_BYTES,
};

/* A record longer than this is read in parts (see the top of the file). */
#define LONG_PIECE ((size_t)1 << 20)
/* A batch also ends at this much text (unless it pads to its longest record). */
#define BATCH_BYTES ((size_t)4 << 20)

static int no_special(const struct cli_opt *opt, const char *arg, void *ctx)
{
    (void)opt, (void)arg, (void)ctx;
    o.add_special = 0;
    return NLP_OK;
}

static struct cli_opt opts[] = {
    {.name = "model", .key = 'm', .kind = CLI_STR, .dest = &o.model, .flags = CLI_NONEMPTY},
    {.name = "cased", .kind = CLI_BOOL, .dest = &o.cased},
    {.name = "input", .key = 'i', .kind = CLI_LIST, .dest = &o.input, .flags = CLI_NONEMPTY},
    {.name = "output", .key = 'o', .kind = CLI_STR, .dest = &o.output, .flags = CLI_NONEMPTY},
    {.name = "in-place", .kind = CLI_BOOL, .dest = &o.in_place},
    {.name = "output-format", .kind = CLI_CHOICE, .dest = &o.out_fmt, .choices = out_fmts},
    {.name = "decode", .key = 'd', .kind = CLI_BOOL, .dest = &o.decode},
    {.name = "input-format", .kind = CLI_CHOICE, .dest = &o.in_fmt, .choices = in_fmts},
    {.name = "special-tokens", .kind = CLI_CHOICE, .dest = &o.special, .choices = special_modes},
    {.name = "add-special-tokens", .kind = CLI_BOOL, .dest = &o.add_special},
    {.name = "no-special-tokens", .kind = CLI_CALL, .flags = CLI_NOARG | CLI_NOCONFIG, .call = no_special},
    {.name = "pair", .kind = CLI_BOOL, .dest = &o.pair},
    {.name = "max-length", .kind = CLI_INT, .dest = &o.max_length, .min = 0, .max = 1e9},
    {.name = "truncation", .kind = CLI_CHOICE, .dest = &o.truncation, .choices = trunc_modes},
    {.name = "padding", .kind = CLI_CHOICE, .dest = &o.padding, .choices = pad_modes},
    {.name = "pad-token", .kind = CLI_STR, .dest = &o.pad_token},
    {.name = "type-ids", .kind = CLI_BOOL, .dest = &o.type_ids},
    {.name = "attention-mask", .kind = CLI_BOOL, .dest = &o.mask},
    {.name = "eot", .kind = CLI_STR, .dest = &o.eot},
    {.name = "strict", .kind = CLI_BOOL, .dest = &o.strict},
    {.name = "null-data", .key = 'z', .kind = CLI_BOOL, .dest = &o.zero},
    {.name = "max-line-bytes", .kind = CLI_INT, .dest = &o.max_line_bytes, .min = 1, .max = 1e15},
    {.name = "batch-size", .key = 'B', .kind = CLI_INT, .dest = &o.batch, .min = 1, .max = 1e7},
    {.name = "threads", .key = 't', .kind = CLI_INT, .dest = &o.threads, .min = 0, .max = 4096},
    {.name = "progress", .kind = CLI_BOOL, .dest = &o.progress, .flags = CLI_NEGATABLE},
    {.name = NULL},
};

static nlp_tokenizer *tk;
static nlp_writer *out;
static char rec_end;
/* subword-nmt output: a piece ends its word when it ends with the suffix
 * (classic BPE, </w>), or when the next piece does not start with the
 * prefix (##); one of them is set */
static const char *snmt_suffix, *snmt_prefix;
static int spm_pieces; /* a sentencepiece model: spm_encode's pieces */

/* did the last record read end without its terminator (a final line
 * without newline): token streams record it, text output does not */
static int last_unterminated;

/* what went through, for --progress and -v: records, tokens, input bytes
 * (the records and their terminators), of in_total when it is known */
static uint64_t n_records, n_tokens, in_bytes, in_total;
static progress_line prog;

static void show_progress(int final)
{
    char extra[80];
    snprintf(extra, sizeof extra, "%llu lines, %llu tokens", (unsigned long long)n_records,
             (unsigned long long)n_tokens);
    progress_show(&prog, (double)in_bytes, (double)in_total, 1e6, "MB", (double)in_bytes, NULL, extra, final);
}

/* invalid UTF-8: total replacements and where the first was */
static size_t n_repl;
static char *first_repl;

// --- shared helpers

/* On any exit before the output is committed: a named output file is
 * discarded (the target stays as it was), standard output is flushed. */
static void abort_output(void)
{
    if (out) nlp_writer_abort(out);
    out = NULL;
}

static void fail_with(int rc) { cli_fail(rc); }

static int32_t find_token(const char *s)
{
    return s ? nlp_tokenizer_token_to_id(tk, s, strlen(s)) : -1;
}

/* 1 if the template in use (the pair template with --pair) puts id into
 * every record it encodes (e.g. BERT's [SEP]): such a token cannot separate
 * documents in a token stream. */
static int template_adds(int32_t id)
{
    if (!o.add_special || id < 0) return 0;
    nlp_tok_state *st = nlp_tok_state_new(tk);
    if (!st) fail_with(NLP_ENOMEM);
    nlp_encoding e = {0};
    nlp_encode_opts eo = {.add_special = 1};
    int rc = nlp_tokenizer_encode(tk, st, "", 0, o.pair ? "" : NULL, 0, &eo, &e), hit = 0;
    for (size_t i = 0; !rc && i < e.n; i++) hit |= e.ids[i] == id;
    nlp_encoding_free(&e);
    nlp_tok_state_free(st);
    return hit;
}

/* End-of-text id for token streams: --eot, else the first known one that
 * the template does not add to every record. */
static int32_t eot_id(int required)
{
    if (o.eot) {
        int32_t id = find_token(o.eot);
        if (id < 0) cli_usage_error("--eot: '%s' is not a token of '%s'", o.eot, o.model);
        if (required && template_adds(id))
            cli_usage_error("--eot: '%s' is added to every record by the template, so documents could not be "
                            "told apart: tokenize -m '%s'%s --no-special-tokens --eot '%s' --output-format bin "
                            "leaves the template out", o.eot, o.model, o.pair ? " --pair" : "", o.eot);
        return id;
    }
    const char *in_template = NULL;
    for (size_t i = 0; nlp_eot_tokens[i]; i++) {
        int32_t id = find_token(nlp_eot_tokens[i]);
        if (id >= 0 && !(required && template_adds(id))) return id;
        if (id >= 0 && !in_template) in_template = nlp_eot_tokens[i];
    }
    /* the first message gives the command that works: a BERT-style
     * tokenizer's [SEP] is free once the template is left out, which is
     * what pretrain wants (it adds [CLS] and [SEP] to its examples) */
    if (required && in_template)
        cli_usage_error("'%s' adds %s to every record through its template, so it cannot separate documents; a token "
                        "stream leaves the template out (pretrain adds [CLS] and [SEP] itself): "
                        "tokenize -m '%s'%s --no-special-tokens --output-format bin",
                        o.model, in_template, o.model, o.pair ? " --pair" : "");
    if (required)
        cli_usage_error("'%s' has no end-of-text token (<|endoftext|>, </s>, <eos>, [SEP]): name one of its tokens "
                        "with --eot",
                        o.model);
    return -1;
}

/* Writes v in decimal at p and returns the end, with room for 8 bytes at
 * p. Below 100,000 (every id of the usual vocabularies) without a branch:
 * five digits made in one word, the leading zeros shifted out, 8 bytes
 * stored (a branch on the length of each id mispredicts on mixed ids).
 * Else digits counted first, then written from the right two at a time. */
static char *u32toa(char *p, uint32_t v)
{
    if (v < 100000) {
        /* v / 10^4 as a 32.32 fixed-point number (2^32 / 10^4 rounded up:
         * exact for every v below 100,000): the whole part is the first
         * digit, and each times 10 of the fraction gives the next */
        uint64_t f = (uint64_t)v * 429497u, w = f >> 32 | '0';
#pragma GCC unroll 4
        for (int d = 1; d < 5; d++) {
            f = (uint32_t)f * 10ull;
            w |= (f >> 32 | '0') << (8 * d);
        }
        const int n = 1 + (v >= 10) + (v >= 100) + (v >= 1000) + (v >= 10000);
        const uint64_t digits = w >> (8 * (5 - n));
        memcpy(p, &digits, 8);
        return p + n;
    }
    static const char pairs[] = "00010203040506070809101112131415161718192021222324252627282930313233343536373839"
                                "40414243444546474849505152535455565758596061626364656667686970717273747576777879"
                                "8081828384858687888990919293949596979899";
    int n = v < 10 ? 1 : v < 100 ? 2 : v < 1000 ? 3 : v < 10000 ? 4 : v < 100000 ? 5 : v < 1000000 ? 6
          : v < 10000000 ? 7 : v < 100000000 ? 8 : v < 1000000000 ? 9 : 10;
    char *e = p + n, *q = e;
    while (v >= 100) {
        uint32_t r = v % 100;
        v /= 100;
        q -= 2;
        q[0] = pairs[2 * r];
        q[1] = pairs[2 * r + 1];
    }
    if (v >= 10) {
        q[-2] = pairs[2 * v];
        q[-1] = pairs[2 * v + 1];
    } else {
        q[-1] = (char)('0' + v);
    }
    return e;
}

/* An input being read: its reader, and the state of -z records. */
struct src {
    nlp_reader *r;
    const char *name; /* as messages name it; outlives the batch */
    nlp_buf acc;      /* -z: the record (part) being returned */
    int zpart;        /* -z: the last record returned was a part */
    uint64_t no;      /* -z: records so far */
};

/* The next input record (a line, or with -z the bytes up to a NUL) or, past
 * `limit` bytes, the next part of one. Returns 1 with *p and *n set (valid
 * until the next call), *no and *off the record's number and the part's
 * byte offset, and *part = 1 when the record goes on; 0 at the end. */
static int next_record(struct src *in, size_t limit, const char **p, size_t *n, uint64_t *no, uint64_t *off,
                       int *part)
{
    int rc;
    nlp_reader *r = in->r;
    if (!o.zero) {
        char *line;
        size_t len;
        nlp_reader_set_max_line(r, limit);
        if ((rc = nlp_reader_line(r, &line, &len)) < 0) fail_with(rc);
        if (rc == 0) return 0;
        *p = line;
        *n = len;
        *no = nlp_reader_lineno(r);
        *off = nlp_reader_line_offset(r);
        *part = nlp_reader_partial(r);
        last_unterminated = !nlp_reader_had_newline(r);
        return 1;
    }
    nlp_buf *acc = &in->acc;
    nlp_buf_reset(acc);
    *off = nlp_reader_offset(r);
    int got_any = 0, ended = 0, at_eof = 0;
    while (acc->len < limit) {
        const char *q;
        size_t have, got;
        if ((rc = nlp_reader_peek(r, (size_t)1 << 16, &q, &have))) fail_with(rc);
        if (have == 0) {
            ended = at_eof = 1;
            break;
        }
        got_any = 1;
        const char *z = memchr(q, 0, have);
        size_t take = z ? (size_t)(z - q) : have;
        if (take > limit - acc->len) take = limit - acc->len, z = NULL;
        if (nlp_buf_append(acc, q, take)) fail_with(NLP_ENOMEM);
        /* consume what was peeked, through a small sink */
        char sink[4096];
        for (size_t skip = take + (z != NULL); skip; skip -= got) {
            if ((rc = nlp_reader_read(r, sink, skip < sizeof sink ? skip : sizeof sink, &got))) fail_with(rc);
            if (!got) break;
        }
        if (z) {
            ended = 1;
            break;
        }
    }
    if (!got_any && !in->zpart) return 0;
    if (!ended) { /* a part: is there more? (a record of exactly `limit` bytes ends here) */
        const char *q;
        size_t have;
        if ((rc = nlp_reader_peek(r, 1, &q, &have))) fail_with(rc);
        if (have == 1 && q[0] == 0) { /* its terminator */
            char c;
            size_t got;
            if ((rc = nlp_reader_read(r, &c, 1, &got))) fail_with(rc);
            ended = 1;
        } else if (have == 0) {
            ended = at_eof = 1;
        }
    }
    if (ended) last_unterminated = at_eof; /* the last record had no NUL after it */
    if (nlp_buf_reserve(acc, 0)) fail_with(NLP_ENOMEM);
    *p = acc->data ? acc->data : "";
    *n = acc->len;
    if (!in->zpart) in->no++;
    *no = in->no;
    *part = in->zpart = !ended;
    return 1;
}

/* s[0..n) for a message: about 60 characters of it, with control characters,
 * backslashes and bytes that are not UTF-8 written as \xHH, so that input
 * quoted in a message cannot reach the terminal raw. Returns a static buffer. */
static const char *shown(const char *s, size_t n)
{
    static char buf[512];
    size_t k = 0, i = 0;
    while (i < n && k < 60 * 4) {
        unsigned char c = (unsigned char)s[i];
        size_t j = i;
        int32_t cp = c >= 0x80 ? nlp_utf8_next(s, n, &j) : -2;
        /* C1 controls and the bidirectional controls are escaped too */
        int ctl = (cp >= 0x80 && cp < 0xA0) || (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
        if (c >= 0x80 && cp >= 0x80 && ctl) {
            k += (size_t)snprintf(buf + k, 9, "\\u%04x", (unsigned)cp);
            i = j;
            continue;
        }
        if (c >= 0x80 && cp >= 0x80) {
            memcpy(buf + k, s + i, j - i);
            k += j - i;
            i = j;
            continue;
        }
        if (c < 0x20 || c == 0x7f || c == '\\' || c >= 0x80) k += (size_t)snprintf(buf + k, 5, "\\x%02x", c);
        else buf[k++] = (char)c;
        i++;
    }
    if (i < n) k += (size_t)snprintf(buf + k, 8, "...");
    buf[k] = 0;
    return buf;
}

// --- encoding

struct rec {
    size_t off, len;
    uint64_t lineno, byteoff;
    const char *name; /* the input it came from (a batch may span inputs) */
};

struct batch {
    nlp_buf text;
    struct rec *r;
    size_t n, cap;
    nlp_encoding *enc;
    nlp_buf *outb;
    char **err;
    size_t *repl;
    uint64_t *repl_at;
};

struct worker {
    nlp_tok_state *st;
    nlp_buf fix;
};

static nlp_padding pad;
static nlp_truncation trunc_opts;
static nlp_encode_opts eopts;

/* Encodes record i of the batch; errors go to b->err[i]. */
static void encode_rec(struct batch *b, size_t i, struct worker *w)
{
    const struct rec *r = &b->r[i];
    const char *name = r->name;
    const char *s = b->text.data + r->off;
    size_t n = r->len, bad;
    b->repl[i] = 0;
    if (!nlp_utf8_valid(s, n, &bad)) {
        if (o.strict) {
            nlp_error(NLP_EDATA, "'%s' line %llu byte %llu: invalid UTF-8", name, (unsigned long long)r->lineno,
                      (unsigned long long)(r->byteoff + bad));
            b->err[i] = nlp_strdup(nlp_errmsg());
            return;
        }
        nlp_buf_reset(&w->fix);
        if (nlp_utf8_repair(s, n, &w->fix, &b->repl[i])) {
            b->err[i] = nlp_strdup("out of memory");
            return;
        }
        b->repl_at[i] = r->byteoff + bad;
        if (!spm_pieces) { /* sentencepiece replaces each ill-formed byte itself, as spm_encode */
            s = w->fix.data;
            n = w->fix.len;
        }
    }
    const char *a = s, *bb = NULL;
    size_t na = n, nb = 0;
    if (o.pair) {
        const char *tab = memchr(s, '\t', n);
        if (!tab) {
            nlp_error(NLP_EDATA, "'%s' line %llu: --pair needs two segments separated by a tab", name,
                      (unsigned long long)r->lineno);
            b->err[i] = nlp_strdup(nlp_errmsg());
            return;
        }
        na = (size_t)(tab - s);
        bb = tab + 1;
        nb = n - na - 1;
        if (memchr(bb, '\t', nb)) {
            size_t fields = 1;
            for (size_t k = 0; k < n; k++) fields += s[k] == '\t';
            nlp_error(NLP_EDATA, "'%s' line %llu: --pair needs two segments separated by one tab, found %zu fields",
                      name, (unsigned long long)r->lineno, fields);
            b->err[i] = nlp_strdup(nlp_errmsg());
            return;
        }
    }
    int rc = nlp_tokenizer_encode(tk, w->st, a, na, bb, nb, &eopts, &b->enc[i]);
    if (rc) {
        nlp_error_prefix(rc, "'%s' line %llu", name, (unsigned long long)r->lineno);
        b->err[i] = nlp_strdup(nlp_errmsg());
    }
}

/* The spelling of piece id into ob: its token, or the character passed
 * through (nlp_encode_opts.unk_passthrough; with the end-of-word suffix
 * when it ends its word, as the vocabulary spells such symbols). */
static int put_piece(int32_t id, nlp_buf *ob)
{
    int32_t cp;
    int final;
    if (nlp_tok_passthrough_char(id, &cp, &final))
        return nlp_utf8_append(ob, cp) || (final && snmt_suffix && nlp_buf_puts(ob, snmt_suffix)) ? NLP_ENOMEM : NLP_OK;
    size_t tn;
    const char *t = nlp_tokenizer_id_to_token(tk, id, &tn);
    return nlp_buf_append(ob, t ? t : "", t ? tn : 0) ? NLP_ENOMEM : NLP_OK;
}

/* Pieces as subword-nmt's apply-bpe writes them: "Ü@@ b@@ ung". */
static int format_snmt(const nlp_encoding *e, nlp_buf *ob)
{
    size_t sl = snmt_suffix ? strlen(snmt_suffix) : 0, pl = snmt_prefix ? strlen(snmt_prefix) : 0;
    for (size_t k = 0; k < e->n; k++) {
        int32_t id = e->ids[k], cp;
        int final = 1, pass = nlp_tok_passthrough_char(id, &cp, &final), special = !pass && nlp_tokenizer_is_special(tk, id);
        if (k && nlp_buf_putc(ob, ' ')) return NLP_ENOMEM;
        size_t at = ob->len;
        if (put_piece(id, ob)) return NLP_ENOMEM;
        char *t = ob->data + at;
        size_t tn = ob->len - at;
        if (sl && !special) {
            final = tn >= sl && memcmp(t + tn - sl, snmt_suffix, sl) == 0;
            if (final) ob->len -= sl;
        }
        if (pl && !special) {
            /* a continuation loses its prefix; a piece whose next piece
             * continues it does not end its word */
            if (tn >= pl && memcmp(t, snmt_prefix, pl) == 0 && k > 0) {
                memmove(t, t + pl, tn - pl);
                ob->len -= pl;
            }
            size_t nn = 0;
            const char *nt = k + 1 < e->n && e->ids[k + 1] >= 0 ? nlp_tokenizer_id_to_token(tk, e->ids[k + 1], &nn) : NULL;
            final = !(nt && !nlp_tokenizer_is_special(tk, e->ids[k + 1]) && nn >= pl && memcmp(nt, snmt_prefix, pl) == 0);
        }
        if (!final && nlp_buf_puts(ob, "@@")) return NLP_ENOMEM;
    }
    return NLP_OK;
}

/* Formats encoding e as a text line into ob. */
static int format_rec(const nlp_encoding *e, nlp_buf *ob)
{
    nlp_buf_reset(ob);
    size_t need = e->n * 12 + 4;
    if (o.type_ids) need += e->n * 4 + 1;
    if (o.mask) need += e->n * 2 + 1;
    if (nlp_buf_reserve(ob, need)) return NLP_ENOMEM;
    if (o.out_fmt == OUT_ID) {
        char *p = ob->data;
        for (size_t k = 0; k < e->n; k++) {
            if (k) *p++ = ' ';
            p = u32toa(p, (uint32_t)e->ids[k]);
        }
        ob->len = (size_t)(p - ob->data);
    } else if (o.out_fmt == OUT_SNMT) {
        if (format_snmt(e, ob)) return NLP_ENOMEM;
    } else {
        /* a sentencepiece unknown run is one piece: its characters are
         * joined (every one but the last is passed through non-final) */
        int glue = 0;
        for (size_t k = 0; k < e->n; k++) {
            if ((k && !glue && nlp_buf_putc(ob, ' ')) || put_piece(e->ids[k], ob)) return NLP_ENOMEM;
            int32_t cp;
            int fin;
            glue = spm_pieces && nlp_tok_passthrough_char(e->ids[k], &cp, &fin) && !fin;
        }
    }
    for (int col = 0; col < 2; col++) {
        const uint8_t *v = col == 0 ? e->type_ids : e->attention;
        if (!(col == 0 ? o.type_ids : o.mask)) continue;
        if (nlp_buf_reserve(ob, e->n * 4 + 10)) return NLP_ENOMEM; /* u32toa stores 8 bytes */
        char *p = ob->data + ob->len;
        *p++ = '\t';
        for (size_t k = 0; k < e->n; k++) {
            if (k) *p++ = ' ';
            p = u32toa(p, v[k]);
        }
        ob->len = (size_t)(p - ob->data);
    }
    return nlp_buf_putc(ob, rec_end);
}

static void batch_grow(struct batch *b, size_t need)
{
    size_t old = b->cap;
    if (need <= old) return;
    size_t c = old ? old * 2 : 64;
    while (c < need) c *= 2;
    struct rec *r = nlp_reallocarray(b->r, c, sizeof *r);
    nlp_encoding *e = nlp_reallocarray(b->enc, c, sizeof *e);
    nlp_buf *ob = e ? nlp_reallocarray(b->outb, c, sizeof *ob) : NULL;
    char **er = ob ? nlp_reallocarray(b->err, c, sizeof *er) : NULL;
    size_t *rp = er ? nlp_reallocarray(b->repl, c, sizeof *rp) : NULL;
    uint64_t *ra = rp ? nlp_reallocarray(b->repl_at, c, sizeof *ra) : NULL;
    if (r) b->r = r;
    if (e) b->enc = e;
    if (ob) b->outb = ob;
    if (er) b->err = er;
    if (rp) b->repl = rp;
    if (ra) b->repl_at = ra;
    if (!r || !ra) fail_with(NLP_ENOMEM);
    memset(b->enc + old, 0, (c - old) * sizeof *b->enc);
    memset(b->outb + old, 0, (c - old) * sizeof *b->outb);
    memset(b->err + old, 0, (c - old) * sizeof *b->err);
    b->cap = c;
}

static void run_batch(struct batch *b, struct worker *ws, int nthreads, nlp_tokbin_writer *bw)
{
    size_t n = b->n;
#pragma omp parallel for schedule(dynamic, 16) num_threads(nthreads) if (nthreads > 1 && n > 32)
    for (size_t i = 0; i < n; i++) encode_rec(b, i, &ws[omp_get_thread_num()]);
    /* the records before the first failing one are written, then the
     * error is reported, as a line-by-line tool would */
    size_t bad_at = n;
    for (size_t i = 0; i < n && bad_at == n; i++)
        if (b->err[i]) bad_at = i;
    n = bad_at;
    for (size_t i = 0; i < n; i++)
        if (b->repl[i]) {
            if (!first_repl) {
                nlp_buf m = {0};
                nlp_buf_printf(&m, "'%s' line %llu byte %llu", b->r[i].name, (unsigned long long)b->r[i].lineno,
                               (unsigned long long)b->repl_at[i]);
                first_repl = nlp_buf_detach(&m, NULL);
            }
            n_repl += b->repl[i];
        }
    if (pad.enabled) {
        size_t longest = 0;
        for (size_t i = 0; i < n; i++)
            if (b->enc[i].n > longest) longest = b->enc[i].n;
        size_t target = nlp_padding_target(&pad, longest);
        for (size_t i = 0; i < n; i++)
            if (nlp_encoding_pad(&b->enc[i], target, pad.pad_id, pad.pad_type_id, pad.left)) fail_with(NLP_ENOMEM);
    }
    if (bw) {
        for (size_t i = 0; i < n; i++) {
            int rc = nlp_tokbin_write_doc(bw, b->enc[i].ids, b->enc[i].n);
            if (rc) fail_with(rc);
        }
    } else {
        int bad = 0;
#pragma omp parallel for schedule(static) num_threads(nthreads) if (nthreads > 1 && n > 256) reduction(| : bad)
        for (size_t i = 0; i < n; i++) bad |= format_rec(&b->enc[i], &b->outb[i]) != 0;
        if (bad) fail_with(NLP_ENOMEM);
        for (size_t i = 0; i < n; i++) {
            int rc = nlp_writer_write(out, b->outb[i].data, b->outb[i].len);
            if (rc) fail_with(rc);
        }
    }
    n_records += n;
    in_bytes += b->text.len + n; /* with their terminators (a last one may lack it) */
    for (size_t i = 0; i < n; i++) n_tokens += b->enc[i].n;
    if (o.progress) show_progress(0);
    if (bad_at < b->n) {
        if (o.progress) progress_end(&prog);
        cli_die(NLP_EXIT_FAILURE, "%s", b->err[bad_at]);
    }
    b->n = 0;
    nlp_buf_reset(&b->text);
}

// --- long records

/* What a long record's pieces need: the template's tokens before and after
 * the text, and where the ids go. */
struct longrec {
    int stream;          /* ids are written as they come (else kept, for truncation) */
    nlp_ids pre, post;   /* the template's tokens around the text */
    int started;         /* something of the record was written */
    size_t budget;       /* truncation: ids kept at most */
    nlp_ids kept, ids;
    nlp_buf fix, out;
};

static struct longrec lr;

/* Why a record longer than LONG_PIECE cannot be encoded in pieces, or NULL
 * when it can. Sets lr.stream and the template's tokens. */
static const char *long_mode(void)
{
    if (!nlp_tokenizer_cuttable(tk))
        return "this tokenizer's pipeline cannot be cut at spaces, so a line is encoded whole";
    if (o.pair) return "with --pair a line is encoded whole";
    if (pad.enabled && !pad.length) return "with --padding longest a line is encoded whole, in its batch";
    int trunc = trunc_opts.enabled;
    if (!trunc && (pad.enabled || o.type_ids || o.mask))
        return "with --padding, --type-ids or --attention-mask and no truncation a line is encoded whole";
    lr.stream = !trunc;
    if (trunc) {
        size_t added = o.add_special ? nlp_postproc_added(&nlp_tokenizer_spec(tk)->post, 0) : 0;
        lr.budget = trunc_opts.max_length > added ? trunc_opts.max_length - added : 0;
        return NULL;
    }
    /* the template around one token: what comes before it and after it */
    nlp_encoding a = {0}, e = {0};
    int32_t x = 0;
    if (nlp_encoding_append(&a, &x, 1, 0, 0) ||
        nlp_postproc_apply(&nlp_tokenizer_spec(tk)->post, &a, NULL, o.add_special, &e))
        fail_with(NLP_ENOMEM);
    size_t seq = 0, at = 0;
    for (size_t i = 0; i < e.n; i++)
        if (!e.special[i]) seq++, at = i;
    nlp_encoding_free(&a);
    if (seq != 1) {
        nlp_encoding_free(&e);
        return "the template repeats the text, so a line is encoded whole";
    }
    lr.pre.n = lr.post.n = 0;
    if (nlp_ids_append(&lr.pre, e.ids, at) || nlp_ids_append(&lr.post, e.ids + at + 1, e.n - at - 1))
        fail_with(NLP_ENOMEM);
    nlp_encoding_free(&e);
    return NULL;
}

/* Writes ids as part of the record being streamed. */
static void stream_ids(const int32_t *ids, size_t n, nlp_tokbin_writer *bw)
{
    int rc;
    if (bw) {
        rc = lr.started ? nlp_tokbin_write_more(bw, ids, n) : nlp_tokbin_write_doc(bw, ids, n);
        if (rc) fail_with(rc);
        lr.started = 1;
        return;
    }
    nlp_buf *b = &lr.out;
    for (size_t k = 0; k < n; k++) {
        if (lr.started && nlp_buf_putc(b, ' ')) fail_with(NLP_ENOMEM);
        lr.started = 1;
        if (o.out_fmt == OUT_ID) {
            if (nlp_buf_reserve(b, 12)) fail_with(NLP_ENOMEM);
            b->len = (size_t)(u32toa(b->data + b->len, (uint32_t)ids[k]) - b->data);
        } else {
            size_t tn;
            const char *t = nlp_tokenizer_id_to_token(tk, ids[k], &tn);
            if (nlp_buf_append(b, t ? t : "", t ? tn : 0)) fail_with(NLP_ENOMEM);
        }
        if (b->len >= 65536) {
            if ((rc = nlp_writer_write(out, b->data, b->len))) fail_with(rc);
            nlp_buf_reset(b);
        }
    }
}

/* Encodes one piece of a long record (s[0..n), at byte `off` of input
 * `name`, record `no`). */
static void long_piece(const char *name, uint64_t no, uint64_t off, const char *s, size_t n, nlp_tok_state *st,
                       nlp_tokbin_writer *bw)
{
    size_t bad, k = 0;
    if (!nlp_utf8_valid(s, n, &bad)) {
        if (o.strict)
            cli_die(NLP_EXIT_FAILURE, "'%s' line %llu byte %llu: invalid UTF-8", name, (unsigned long long)no,
                    (unsigned long long)(off + bad));
        nlp_buf_reset(&lr.fix);
        if (nlp_utf8_repair(s, n, &lr.fix, &k)) fail_with(NLP_ENOMEM);
        if (!first_repl) {
            nlp_buf m = {0};
            nlp_buf_printf(&m, "'%s' line %llu byte %llu", name, (unsigned long long)no, (unsigned long long)(off + bad));
            first_repl = nlp_buf_detach(&m, NULL);
        }
        n_repl += k;
        if (!spm_pieces) {
            s = lr.fix.data;
            n = lr.fix.len;
        }
    }
    /* right truncation: what comes after the budget is never needed */
    if (!lr.stream && !trunc_opts.left && lr.kept.n >= lr.budget) return;
    lr.ids.n = 0;
    int rc = nlp_tokenizer_encode_ids(tk, st, s, n, eopts.split_special, &lr.ids);
    if (rc) cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: %s", name, (unsigned long long)no, nlp_errmsg());
    if (lr.stream) {
        stream_ids(lr.ids.v, lr.ids.n, bw);
        return;
    }
    size_t take = lr.ids.n;
    if (!trunc_opts.left && take > lr.budget - lr.kept.n) take = lr.budget - lr.kept.n;
    if (nlp_ids_append(&lr.kept, lr.ids.v, take)) fail_with(NLP_ENOMEM);
    if (trunc_opts.left && lr.kept.n > 2 * lr.budget + LONG_PIECE) { /* keep the last budget ids */
        memmove(lr.kept.v, lr.kept.v + lr.kept.n - lr.budget, lr.budget * sizeof *lr.kept.v);
        lr.kept.n = lr.budget;
    }
}

/* A record that goes on past its first part p[0..n): encoded in pieces cut
 * at spaces when long_mode() allows it, else read whole (at most
 * --max-line-bytes) and encoded as a batch of one. */
static void long_record(struct src *in, const char *p, size_t n, uint64_t no, uint64_t off, struct batch *b,
                        struct worker *ws, int nthreads, nlp_tokbin_writer *bw)
{
    static nlp_buf carry; /* the record's bytes not yet encoded */
    const size_t max = (size_t)o.max_line_bytes, limit = LONG_PIECE < max ? LONG_PIECE : max;
    const char *why = long_mode();
    int part = 1, rc;
    uint64_t at = off; /* byte offset of carry's first byte */
    nlp_buf_reset(&carry);
    if (nlp_buf_append(&carry, p, n)) fail_with(NLP_ENOMEM);
    if (why) {
        while (part) {
            uint64_t no2;
            if (!next_record(in, max - carry.len + 1, &p, &n, &no2, &off, &part)) break;
            if (carry.len + n > max)
                cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: longer than %zu bytes (--max-line-bytes raises the limit; %s)",
                        in->name, (unsigned long long)no, max, why);
            if (nlp_buf_append(&carry, p, n)) fail_with(NLP_ENOMEM);
        }
        /* a record of the batch like any other (padding to the longest
         * of -B records must see it there) */
        batch_grow(b, b->n + 1);
        b->r[b->n++] = (struct rec){b->text.len, carry.len, no, at, in->name};
        if (nlp_buf_append(&b->text, carry.data, carry.len)) fail_with(NLP_ENOMEM);
        int by_count = pad.enabled && !pad.length;
        if (b->n >= (size_t)o.batch || (!by_count && b->text.len >= BATCH_BYTES)) run_batch(b, ws, nthreads, bw);
        return;
    }
    if (b->n) run_batch(b, ws, nthreads, bw); /* the records before it first: its output is written as it comes */
    lr.started = 0;
    lr.kept.n = 0;
    nlp_buf_reset(&lr.out);
    if (lr.stream && lr.pre.n) stream_ids(lr.pre.v, lr.pre.n, bw);
    for (;;) {
        size_t cut = part ? nlp_tokenizer_cut(carry.data, carry.len) : carry.len;
        if (cut == 0 && carry.len > max)
            cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: no space to cut the line at in %zu bytes from byte %llu "
                    "(--max-line-bytes raises the limit)", in->name, (unsigned long long)no, max,
                    (unsigned long long)at);
        if (cut > 0) {
            long_piece(in->name, no, at, carry.data, cut, ws[0].st, bw);
            memmove(carry.data, carry.data + cut, carry.len - cut);
            carry.len -= cut;
            at += cut;
        }
        if (!part) break;
        uint64_t no2;
        if (!next_record(in, limit, &p, &n, &no2, &off, &part)) break;
        if (nlp_buf_append(&carry, p, n)) fail_with(NLP_ENOMEM);
    }
    if (lr.stream) {
        if (lr.post.n) stream_ids(lr.post.v, lr.post.n, bw);
        if (bw) {
            if (!lr.started && (rc = nlp_tokbin_write_doc(bw, NULL, 0))) fail_with(rc);
        } else {
            if (nlp_buf_putc(&lr.out, rec_end)) fail_with(NLP_ENOMEM);
            if ((rc = nlp_writer_write(out, lr.out.data, lr.out.len))) fail_with(rc);
        }
        return;
    }
    /* truncated: the kept ids become the record's encoding */
    if (trunc_opts.left && lr.kept.n > lr.budget) {
        memmove(lr.kept.v, lr.kept.v + lr.kept.n - lr.budget, lr.budget * sizeof *lr.kept.v);
        lr.kept.n = lr.budget;
    }
    nlp_encoding a = {0};
    batch_grow(b, 1);
    nlp_encoding *e = &b->enc[0];
    if (nlp_encoding_append(&a, lr.kept.v, lr.kept.n, 0, 0) ||
        nlp_postproc_apply(&nlp_tokenizer_spec(tk)->post, &a, NULL, o.add_special, e))
        fail_with(NLP_ENOMEM);
    nlp_encoding_free(&a);
    if (pad.enabled &&
        nlp_encoding_pad(e, nlp_padding_target(&pad, e->n), pad.pad_id, pad.pad_type_id, pad.left))
        fail_with(NLP_ENOMEM);
    if (bw) {
        if ((rc = nlp_tokbin_write_doc(bw, e->ids, e->n))) fail_with(rc);
    } else {
        if (format_rec(e, &b->outb[0])) fail_with(NLP_ENOMEM);
        if ((rc = nlp_writer_write(out, b->outb[0].data, b->outb[0].len))) fail_with(rc);
    }
}

/* Reads records from input `in` into the batch, encoding each full one;
 * the caller encodes the rest after the last input, so that batches span
 * inputs. */
static void encode_stream(struct src *in, struct batch *b, struct worker *ws, int nthreads, nlp_tokbin_writer *bw)
{
    const size_t max_bytes = BATCH_BYTES;
    /* padding to the longest of a batch needs batches of exactly -B records;
     * otherwise a batch also ends at 4 MB of text */
    const int by_count = pad.enabled && !pad.length;
    const size_t limit = LONG_PIECE < (size_t)o.max_line_bytes ? LONG_PIECE : (size_t)o.max_line_bytes;
    const char *p;
    size_t n;
    uint64_t no = 0, off;
    int part;
    while (next_record(in, limit, &p, &n, &no, &off, &part)) {
        if (part) {
            long_record(in, p, n, no, off, b, ws, nthreads, bw);
            continue;
        }
        batch_grow(b, b->n + 1);
        b->r[b->n++] = (struct rec){b->text.len, n, no, off, in->name};
        if (nlp_buf_append(&b->text, p, n)) fail_with(NLP_ENOMEM);
        if (b->n >= (size_t)o.batch || (!by_count && b->text.len >= max_bytes)) run_batch(b, ws, nthreads, bw);
    }
}

// --- decoding

static void decode_line(const char *name, uint64_t lineno, const char *s, size_t n, int fmt, nlp_ids *ids,
                        nlp_buf *text)
{
    ids->n = 0;
    size_t i = 0;
    while (i < n) {
        while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r')) i++;
        if (i >= n) break;
        size_t j = i;
        while (j < n && s[j] != ' ' && s[j] != '\t' && s[j] != '\r') j++;
        int32_t id = -1;
        if (fmt == IN_PIECE) {
            id = nlp_tokenizer_token_to_id(tk, s + i, j - i);
            if (id < 0)
                cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: '%s' is not a token of '%s'", name,
                        (unsigned long long)lineno, shown(s + i, j - i), o.model);
        } else {
            uint64_t v = 0;
            int ok = j - i <= 10;
            for (size_t k = i; k < j && ok; k++) {
                if (s[k] < '0' || s[k] > '9') ok = 0;
                else v = v * 10 + (uint64_t)(s[k] - '0');
            }
            if (!ok || v > INT32_MAX) {
                int digits = strspn(s + i, "0123456789") >= j - i;
                cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: '%s' is not a token id%s", name, (unsigned long long)lineno,
                        shown(s + i, j - i), digits ? "" : " (pieces are read with --input-format piece)");
            }
            id = (int32_t)v;
        }
        if (nlp_ids_push(ids, id)) fail_with(NLP_ENOMEM);
        i = j;
    }
    nlp_buf_reset(text);
    int rc = nlp_tokenizer_decode(tk, ids->v, ids->n, !o.add_special, text, NULL);
    if (rc == NLP_EDATA) cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: %s", name, (unsigned long long)lineno, nlp_errmsg());
    if (rc || nlp_buf_putc(text, rec_end) || nlp_writer_write(out, text->data, text->len)) fail_with(rc ? rc : NLP_EIO);
}

/* --input-format auto on text: ids when every field of the first record
 * that has any (within the first 64 KiB) is a (signed) decimal number, else
 * pieces.
 * (A line of numbers is read as ids: a piece that is all digits needs
 * --input-format piece.) */
static int sniff_text(const char *p, size_t n)
{
    size_t i = 0;
    while (i < n) {
        const char *e = memchr(p + i, rec_end, n - i);
        size_t end = e ? (size_t)(e - p) : n;
        int fields = 0, digits_only = 1;
        for (size_t k = i; k < end; k++) {
            char c = p[k];
            if (c == ' ' || c == '\t' || c == '\r') continue;
            int starts = k == i || p[k - 1] == ' ' || p[k - 1] == '\t' || p[k - 1] == '\r';
            fields += starts;
            /* a sign counts as a number's: "-3" is a bad id, not a piece */
            if ((c < '0' || c > '9') && !(starts && (c == '-' || c == '+'))) digits_only = 0;
        }
        if (fields) return digits_only ? IN_ID : IN_PIECE;
        i = end + 1;
    }
    return IN_ID;
}

static void decode_stream(struct src *in)
{
    nlp_reader *r = in->r;
    const char *name = nlp_reader_name(r);
    int fmt = o.in_fmt;
    if (fmt == IN_AUTO) {
        const char *p;
        size_t have;
        int rc = nlp_reader_peek(r, 4, &p, &have);
        if (rc) fail_with(rc);
        if (have == 4 && nlp_tokbin_sniff((const unsigned char *)p)) fmt = IN_BIN;
        else if ((rc = nlp_reader_peek(r, (size_t)1 << 16, &p, &have))) fail_with(rc);
        else fmt = sniff_text(p, have);
    }
    nlp_ids ids = {0};
    nlp_buf text = {0};
    if (fmt == IN_BIN) {
        nlp_tokbin_reader *br;
        int rc = nlp_tokbin_reader_new(&br, r, eot_id(0));
        if (rc) fail_with(rc);
        const nlp_tokbin_info *info = nlp_tokbin_reader_info(br);
        size_t vs = nlp_tokenizer_vocab_size(tk);
        if (info->kind == NLP_TOKBIN_NLPIPE && info->vocab_size != vs)
            cli_die(NLP_EXIT_FORMAT, "'%s' was written with a vocabulary of %lu tokens; '%s' has %zu", name,
                    (unsigned long)info->vocab_size, o.model, vs);
        if (info->tokenizer && info->tokenizer != nlp_tokbin_fingerprint(tk))
            cli_die(NLP_EXIT_FORMAT, "'%s' was made by another tokenizer than '%s' (the same vocabulary size, other "
                    "tokens)", name, o.model);
        if (info->kind == NLP_TOKBIN_LLMC && info->eot < 0)
            cli_warn("'%s': no end-of-text token known: the llm.c shard is one document", name);
        /* every id is checked against the tokenizer where it is read, so a
         * bad one is reported with its byte offset */
        nlp_tokbin_reader_limit(br, vs, o.model);
        uint64_t doc = 0;
        while ((rc = nlp_tokbin_next_doc(br, &ids)) == 1) {
            doc++;
            n_records++;
            n_tokens += ids.n;
            nlp_buf_reset(&text);
            rc = nlp_tokenizer_decode(tk, ids.v, ids.n, !o.add_special, &text, NULL);
            if (rc == NLP_EDATA)
                cli_die(NLP_EXIT_FORMAT, "'%s' document %llu: %s", name, (unsigned long long)doc, nlp_errmsg());
            /* the text's last line had no terminator: none is added */
            if (rc || (!nlp_tokbin_reader_unterminated(br) && nlp_buf_putc(&text, rec_end))) fail_with(rc ? rc : NLP_ENOMEM);
            if ((rc = nlp_writer_write(out, text.data, text.len))) fail_with(rc);
        }
        if (rc < 0) fail_with(rc);
        nlp_tokbin_reader_free(br);
    } else {
        const char *p;
        size_t n, max = (size_t)o.max_line_bytes;
        uint64_t no = 0, off;
        int part;
        while (next_record(in, max, &p, &n, &no, &off, &part)) {
            if (part)
                cli_die(NLP_EXIT_FAILURE, "'%s' line %llu: longer than %zu bytes (--max-line-bytes raises the limit)",
                        name, (unsigned long long)no, max);
            decode_line(name, no, p, n, fmt, &ids, &text);
            n_records++;
            n_tokens += ids.n;
        }
    }
    nlp_ids_free(&ids);
    nlp_buf_free(&text);
}

/* -v: what went through, at the end */
static void summary(double seconds)
{
    if (cli_verbosity < 1) return;
    double t = seconds > 0 ? seconds : 1e-9;
    if (o.decode)
        cli_debug("%llu records, %llu tokens decoded in %.2f s (%.0f tokens/s)", (unsigned long long)n_records,
                  (unsigned long long)n_tokens, seconds, n_tokens / t);
    else
        cli_debug("%llu lines, %llu tokens, %.1f MB in %.2f s (%.1f MB/s, %.0f tokens/s)", (unsigned long long)n_records,
                  (unsigned long long)n_tokens, in_bytes / 1e6, seconds, in_bytes / 1e6 / t, n_tokens / t);
}

// --- main

static void setup_padding_and_truncation(void)
{
    const nlp_tok_spec *s = nlp_tokenizer_spec(tk);
    trunc_opts = s->trunc;
    if (o.max_length > 0) {
        trunc_opts.enabled = o.truncation != 3;
        trunc_opts.max_length = (size_t)o.max_length;
        trunc_opts.strategy = o.truncation == 1 ? NLP_TRUNC_ONLY_FIRST
                         : o.truncation == 2 ? NLP_TRUNC_ONLY_SECOND
                                             : NLP_TRUNC_LONGEST_FIRST;
    } else if (o.truncation == 3) {
        trunc_opts.enabled = 0;
    }
    if (trunc_opts.enabled) {
        size_t added = o.add_special ? nlp_postproc_added(&s->post, o.pair) : 0;
        if (trunc_opts.max_length < added && o.max_length > 0)
            cli_usage_error("--max-length %zu is smaller than the %zu special tokens the template adds",
                            trunc_opts.max_length, added);
        if (trunc_opts.max_length < added) /* the tokenizer file's own truncation */
            cli_die(NLP_EXIT_FORMAT, "'%s': truncation max_length %zu is smaller than the %zu special tokens the "
                    "template adds", o.model, trunc_opts.max_length, added);
        if (trunc_opts.strategy == NLP_TRUNC_ONLY_SECOND && !o.pair)
            cli_usage_error("--truncation only-second needs --pair");
    }
    pad = s->pad;
    pad.pad_token = NULL;
    if (o.padding != PAD_NONE) {
        pad.enabled = 1;
        if (o.padding == PAD_MAX) {
            if (o.max_length <= 0) cli_usage_error("--padding max needs --max-length");
            pad.length = (size_t)o.max_length;
        } else {
            pad.length = 0;
        }
        const char *name = o.pad_token ? o.pad_token : s->pad.enabled ? s->pad.pad_token : NULL;
        int32_t id = -1;
        if (name) {
            id = find_token(name);
            if (id < 0) cli_usage_error("--pad-token: '%s' is not a token of '%s'", name, o.model);
        } else if ((id = find_token("[PAD]")) < 0 && (id = find_token("<pad>")) < 0) {
            cli_usage_error("'%s' has no padding token ([PAD] or <pad>): name one with --pad-token", o.model);
        }
        pad.pad_id = id;
    } else if (o.pad_token) {
        int32_t id = find_token(o.pad_token);
        if (id < 0) cli_usage_error("--pad-token: '%s' is not a token of '%s'", o.pad_token, o.model);
        pad.pad_id = id;
    }
}

/* file scope, so that memory still held at an error exit is reachable */
static const char **inputs;
static struct src *srcs;

int main(int argc, char **argv)
{
    o.progress = isatty(2);
    struct cli c = {"tokenize", usage, opts, NULL};
    /* the command line as given (option parsing reorders argv) */
    char **argv0 = nlp_calloc((size_t)argc + 1, sizeof *argv0);
    if (!argv0) fail_with(NLP_ENOMEM);
    memcpy(argv0, argv, (size_t)argc * sizeof *argv);
    int first = cli_parse(&c, argc, argv);
    /* only threads that wait for work need the passive policy, and the
     * re-execution it takes costs a process start (a third of loading
     * GPT-2): not for one thread */
    if (o.threads != 1 && !(o.threads == 0 && nlp_cpu_count() == 1)) nlp_threads_passive(argc, argv0);
    free(argv0);
    nlp_writer_set_in_place(o.in_place);
    if (!o.model) cli_usage_error("no tokenizer: give one with -m");
    if (o.out_fmt == OUT_BIN && (o.type_ids || o.mask))
        cli_usage_error("--type-ids and --attention-mask need a text output format (piece or id)");
    if (o.out_fmt == OUT_BIN && !o.decode && isatty(1) && strcmp(o.output, "-") == 0)
        cli_usage_error("refusing to write a binary token stream to a terminal: use -o or a pipe");
    rec_end = o.zero ? '\0' : '\n';

    nlp_tokfiles_opts fo = {.cased = o.cased};
    int rc = nlp_tokfiles_load(o.model, &fo, &tk);
    if (rc) cli_fail_file(rc);
    if (o.cased && fo.fmt != NLP_TOKF_VOCAB)
        cli_usage_error("--cased is for a bare BERT vocab.txt; '%s' names its own normalizer", o.model);
    const nlp_tok_spec *spec = nlp_tokenizer_spec(tk);
    spm_pieces = spec->model == NLP_MODEL_SPM;
    if (spec->model == NLP_MODEL_BPE) {
        snmt_suffix = spec->bpe.end_of_word_suffix;
        snmt_prefix = snmt_suffix ? NULL : spec->bpe.continuing_subword_prefix;
    } else if (spec->model == NLP_MODEL_WORDPIECE) {
        snmt_prefix = spec->wp.continuing_subword_prefix ? spec->wp.continuing_subword_prefix : NLP_WORDPIECE_PREFIX;
    }
    if (snmt_suffix && !*snmt_suffix) snmt_suffix = NULL;
    if (snmt_prefix && !*snmt_prefix) snmt_prefix = NULL;
    if (o.out_fmt == OUT_SNMT && !o.decode && !snmt_suffix && !snmt_prefix)
        cli_usage_error("--output-format subword-nmt needs a tokenizer that marks word ends (an end-of-word suffix such "
                        "as </w>) or continuations (a prefix such as ##); '%s' marks neither", o.model);

    inputs = nlp_calloc((size_t)argc + o.input.n + 2, sizeof *inputs);
    size_t ninputs = 0;
    if (!inputs) fail_with(NLP_ENOMEM);
    for (size_t i = 0; i < o.input.n; i++) inputs[ninputs++] = o.input.v[i];
    for (int i = first; i < argc; i++) inputs[ninputs++] = argv[i];
    if (!ninputs) inputs[ninputs++] = "-";
    if (!(srcs = nlp_calloc(ninputs, sizeof *srcs))) fail_with(NLP_ENOMEM);

    if ((rc = nlp_writer_open(&out, o.output, 0))) fail_with(rc);
    atexit(abort_output);
    progress_start(&prog, NULL);
    /* the share done needs every input's size (not a pipe's) */
    in_total = progress_input_size(inputs, ninputs);

    if (o.decode) {
        for (size_t f = 0; f < ninputs; f++) {
            struct src *in = &srcs[f];
            if ((rc = nlp_reader_open(&in->r, inputs[f]))) fail_with(rc);
            in->name = nlp_reader_name(in->r);
            decode_stream(in);
            nlp_reader_close(in->r);
            nlp_buf_free(&in->acc);
        }
    } else {
        setup_padding_and_truncation();
        eopts.add_special = o.add_special;
        eopts.split_special = o.special == 1;
        /* subword-nmt's codes name no unknown token: a character no merge
         * knows is passed through, as apply-bpe does */
        eopts.unk_passthrough =
            o.out_fmt == OUT_SNMT || (o.out_fmt == OUT_PIECE && (fo.fmt == NLP_TOKF_CODES || spm_pieces));
        eopts.trunc = &trunc_opts;
        int nthreads = nlp_threads_set((int)o.threads);
        cli_debug("%d thread%s", nthreads, nthreads == 1 ? "" : "s");
        struct worker *ws = nlp_calloc((size_t)nthreads, sizeof *ws);
        if (!ws) fail_with(NLP_ENOMEM);
        for (int t = 0; t < nthreads; t++)
            if (!(ws[t].st = nlp_tok_state_new(tk))) fail_with(NLP_ENOMEM);
        nlp_tokbin_writer *bw = NULL;
        if (o.out_fmt == OUT_BIN &&
            (rc = nlp_tokbin_writer_new_fp(&bw, out, (uint32_t)nlp_tokenizer_vocab_size(tk), eot_id(1),
                                           nlp_tokbin_fingerprint(tk))))
            fail_with(rc);
        struct batch b = {0};
        for (size_t f = 0; f < ninputs; f++) {
            struct src *in = &srcs[f];
            if ((rc = nlp_reader_open(&in->r, inputs[f]))) fail_with(rc);
            if (!(in->name = nlp_strdup(nlp_reader_name(in->r)))) fail_with(NLP_ENOMEM);
            encode_stream(in, &b, ws, nthreads, bw);
            nlp_reader_close(in->r);
            in->r = NULL;
            nlp_buf_free(&in->acc);
        }
        if (b.n) run_batch(&b, ws, nthreads, bw);
        if (o.progress) {
            show_progress(1);
            progress_end(&prog);
        }
        if (bw && (rc = nlp_tokbin_write_end(bw, last_unterminated))) fail_with(rc);
        nlp_tokbin_writer_free(bw);
        if (n_repl)
            cli_info("warning: replaced %zu invalid UTF-8 sequence%s with U+FFFD (the first at %s); --strict makes "
                     "this an error",
                     n_repl, n_repl == 1 ? "" : "s", first_repl);
        for (int t = 0; t < nthreads; t++) {
            nlp_tok_state_free(ws[t].st);
            nlp_buf_free(&ws[t].fix);
        }
        free(ws);
        for (size_t i = 0; i < b.cap; i++) {
            nlp_encoding_free(&b.enc[i]);
            nlp_buf_free(&b.outb[i]);
            free(b.err[i]);
        }
        free(b.r);
        free(b.enc);
        free(b.outb);
        free(b.err);
        free(b.repl);
        free(b.repl_at);
        nlp_buf_free(&b.text);
        free(first_repl);
        for (size_t f = 0; f < ninputs; f++) free((char *)srcs[f].name);
        nlp_ids_free(&lr.pre);
        nlp_ids_free(&lr.post);
        nlp_ids_free(&lr.kept);
        nlp_ids_free(&lr.ids);
        nlp_buf_free(&lr.fix);
        nlp_buf_free(&lr.out);
    }
    nlp_writer *w = out;
    out = NULL;
    if ((rc = nlp_writer_close(w))) fail_with(rc);
    free(srcs);
    summary(progress_now() - prog.t0);
    free(inputs);
    nlp_tokenizer_free(tk);
    cli_free();
    return 0;
}
