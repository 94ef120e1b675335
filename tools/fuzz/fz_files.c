/* tools/fuzz/fz_files.c — libFuzzer target: token streams (nlpipe and llm.c)
 * from a memfd, and subword-nmt codes, BERT vocab.txt, merges.txt and
 * vocab.json files through tokfiles, written back in every format and used.
 * Build and run: tools/fuzz/run. */
#include "tok/tokbin.h"
#include "tok/tokfiles.h"
#include "base/io.h"
#include "base/err.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <assert.h>
#include <stdio.h>
#include <fcntl.h>
#include <sys/stat.h>

static void put(const char *path, const uint8_t *d, size_t n)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (n) { ssize_t w = write(fd, d, n); (void)w; }
    close(fd);
}

int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n);
int LLVMFuzzerTestOneInput(const uint8_t *d, size_t n)
{
    if (n < 1) return 0;
    int which = d[0] % 5;
    d++, n--;
    if (which == 0) {
        int fd = memfd_create("tb", 0);
        if (n) { ssize_t w = write(fd, d, n); (void)w; }
        lseek(fd, 0, SEEK_SET);
        nlp_reader *r;
        if (nlp_reader_from_fd(&r, fd, "tb", 1)) return 0;
        nlp_tokbin_reader *br;
        if (nlp_tokbin_reader_new(&br, r, 7) == 0) {
            nlp_ids ids = {0};
            int rc, docs = 0;
            while ((rc = nlp_tokbin_next_doc(br, &ids)) == 1 && docs < 100000) docs++;
            nlp_ids_free(&ids);
            nlp_tokbin_reader_free(br);
        }
        nlp_reader_close(r);
        return 0;
    }
    static char dir[64];
    if (!dir[0]) { snprintf(dir, sizeof dir, "/dev/shm/nlpipe-fuzz-%d", (int)getpid()); mkdir(dir, 0755); }
    char p[128], q[128];
    nlp_tok_spec s;
    int rc = -1;
    if (which == 1) { snprintf(p, sizeof p, "%s/codes", dir); put(p, d, n); rc = nlp_tokfiles_read_codes(p, &s); }
    else if (which == 2) { snprintf(p, sizeof p, "%s/vocab.txt", dir); put(p, d, n); rc = nlp_tokfiles_read_vocab_txt(p, n && (d[0] & 1), &s); }
    else if (which == 3) {
        /* merges.txt against a fixed vocab.json of single characters and a few merges */
        static const char vj[] = "{\"a\":0,\"b\":1,\"c\":2,\"ab\":3,\"abc\":4,\"\\u0120\":5,\"\\u0120a\":6,\"bc\":7}";
        snprintf(p, sizeof p, "%s/vocab.json", dir); snprintf(q, sizeof q, "%s/merges.txt", dir);
        put(p, (const uint8_t *)vj, strlen(vj)); put(q, d, n);
        rc = nlp_tokfiles_read_pair(p, q, n && (d[0] & 1), &s);
    } else {
        snprintf(p, sizeof p, "%s/vocab.json", dir); snprintf(q, sizeof q, "%s/merges.txt", dir);
        put(p, d, n); put(q, (const uint8_t *)"#version: 0.2\na b\nab c\n", 23);
        rc = nlp_tokfiles_read_pair(p, q, 0, &s);
    }
    if (rc) return 0;
    /* write it back in every format, then compile and use it */
    snprintf(q, sizeof q, "%s/out", dir);
    for (int f = 0; f < 5; f++) nlp_tokfiles_write(&s, (nlp_tok_format)f, q);
    nlp_tokenizer *tk;
    if (nlp_tokenizer_new(&tk, &s)) { nlp_tok_spec_free(&s); return 0; }
    nlp_tok_state *st = nlp_tok_state_new(tk);
    nlp_ids ids = {0};
    nlp_tokenizer_encode_ids(tk, st, (const char *)d, n > 200 ? 200 : n, 0, &ids);
    nlp_buf out = {0};
    nlp_tokenizer_decode(tk, ids.v, ids.n, 0, &out, NULL);
    nlp_buf_free(&out);
    nlp_ids_free(&ids);
    nlp_tok_state_free(st);
    nlp_tokenizer_free(tk);
    return 0;
}
