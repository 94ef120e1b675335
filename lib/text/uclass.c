/*
 * uclass.c — character class table and per-character lowercasing. See uclass.h.
 */
#include "text/uclass.h"
#include "text/unicode.h"
#include "text/utf8.h"

#include <pthread.h>

static uint8_t bmp[0x10000];
static pthread_once_t bmp_once = PTHREAD_ONCE_INIT;

uint8_t nlp_uclass_slow(int32_t cp)
{
    if (cp < 0 || cp > 0x10FFFF) return 0;
    nlp_uc_cat c = nlp_uc_category(cp);
    uint8_t k = 0;
    if (nlp_uc_cat_is_letter(c)) k |= NLP_UCL_LETTER | NLP_UCL_WORD;
    if (nlp_uc_cat_is_number(c)) k |= NLP_UCL_NUMBER;
    if (c == NLP_UC_ND || c == NLP_UC_NL) k |= NLP_UCL_WORD;
    if (nlp_uc_cat_is_punct(c)) k |= NLP_UCL_PUNCT;
    if (c == NLP_UC_PC) k |= NLP_UCL_WORD;
    if (nlp_uc_cat_is_mark(c)) k |= NLP_UCL_MARK | NLP_UCL_WORD;
    if (c == NLP_UC_MN) k |= NLP_UCL_MN;
    if (nlp_uc_cat_is_other(c)) k |= NLP_UCL_OTHER;
    if (cp == 0x200C || cp == 0x200D) k |= NLP_UCL_WORD;
    /* the symbols (So) that Unicode's Alphabetic adds to L and Nl: circled,
     * squared and negative circled/squared Latin letters */
    if ((cp >= 0x24B6 && cp <= 0x24E9) || (cp >= 0x1F130 && cp <= 0x1F149) || (cp >= 0x1F150 && cp <= 0x1F169) ||
        (cp >= 0x1F170 && cp <= 0x1F189))
        k |= NLP_UCL_WORD;
    if (nlp_uc_is_white_space(cp)) k |= NLP_UCL_SPACE;
    return k;
}

static void build_bmp(void)
{
    for (int32_t cp = 0; cp < 0x10000; cp++) bmp[cp] = nlp_uclass_slow(cp);
}

const uint8_t *nlp_uclass_bmp(void)
{
    pthread_once(&bmp_once, build_bmp);
    return bmp;
}

int nlp_uclass_lower_append(nlp_buf *out, int32_t cp)
{
    if (cp == 0x130) return nlp_buf_append(out, "i\xCC\x87", 3);
    return nlp_utf8_append(out, nlp_uc_tolower(cp));
}
