/*
 * encode.c — libnlpipe from another program: encode a string with a
 * tokenizer and print each token's id and piece, one per line. It is C and
 * C++ alike (nlpipe.h reads as both), and make test builds it both ways
 * against an installed tree.
 *
 *   make install PREFIX=/usr/local
 *   cc encode.c $(pkg-config --cflags --libs nlpipe) -o encode
 *   ./encode tokenizer.json "Hello world"
 */
#include <nlpipe.h>

#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: %s TOKENIZER TEXT\n", argv[0]);
        return 2;
    }
    /* any tokenizer file tokenize -m reads: tokenizer.json, GPT-2's pair,
     * a BERT vocab.txt, subword-nmt codes, or a directory holding one */
    nlp_tokenizer *tk = NULL;
    int rc = nlp_tokfiles_load(argv[1], NULL, &tk);
    if (rc) {
        fprintf(stderr, "encode: %s\n", nlp_errmsg()); /* names the file and what is wrong */
        return nlp_exit_code(rc);
    }
    nlp_tok_state *st = nlp_tok_state_new(tk); /* one per thread */
    nlp_encoding enc;
    nlp_encode_opts opts;
    memset(&enc, 0, sizeof enc);
    memset(&opts, 0, sizeof opts);
    opts.add_special = 1; /* the tokenizer's template, such as [CLS] ... [SEP] */
    rc = st ? nlp_tokenizer_encode(tk, st, argv[2], strlen(argv[2]), NULL, 0, &opts, &enc) : NLP_ENOMEM;
    if (rc) fprintf(stderr, "encode: %s\n", *nlp_errmsg() ? nlp_errmsg() : nlp_status_name(rc));
    for (size_t i = 0; !rc && i < enc.n; i++) {
        size_t n = 0;
        const char *piece = nlp_tokenizer_id_to_token(tk, enc.ids[i], &n);
        printf("%ld\t%.*s\n", (long)enc.ids[i], (int)n, piece ? piece : "");
    }
    nlp_encoding_free(&enc);
    nlp_tok_state_free(st);
    nlp_tokenizer_free(tk);
    return rc ? nlp_exit_code(rc) : 0;
}
