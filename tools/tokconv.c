/*
 * tokconv — writes any tokenizer nlpipe reads as a tokenizer.json: for the
 * sentencepiece tests (tests/golden/sentencepiece.sh) and for users who want
 * HF's form of a .model file.
 *
 *   tools/tokconv [--hf-only] TOKENIZER OUT.json
 *
 * TOKENIZER is anything `tokenize -m` takes. A sentencepiece model is
 * written as HF's view of it (tok/tokjson.h's nlp_tokjson_spm_view) plus
 * the model itself, which nlpipe reads back exactly; with --hf-only the
 * model is left out, so that nlpipe reads the file as HF does. Exits 0,
 * 2 (usage) or 3 (the tokenizer cannot be read or written that way).
 */
#include "base/err.h"
#include "base/io.h"
#include "tok/tokfiles.h"
#include "tok/tokjson.h"

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int hf = 0, a = 1;
    if (argc > 1 && strcmp(argv[1], "--hf-only") == 0) hf = 1, a++;
    if (argc - a != 2) {
        fprintf(stderr, "usage: tokconv [--hf-only] TOKENIZER OUT.json\n");
        return 2;
    }
    nlp_tok_spec s;
    int rc = nlp_tokfiles_read(argv[a], NULL, &s);
    if (rc) {
        fprintf(stderr, "tokconv: %s\n", nlp_errmsg());
        return 3;
    }
    nlp_buf b = {0};
    rc = nlp_tokjson_dump_as(&s, hf, &b);
    if (!rc) rc = nlp_write_file(argv[a + 1], b.data, b.len);
    nlp_buf_free(&b);
    nlp_tok_spec_free(&s);
    if (rc) {
        fprintf(stderr, "tokconv: %s\n", nlp_errmsg());
        return 3;
    }
    return 0;
}
