/*
 * unicode.c — character properties and normalization via utf8proc. See unicode.h.
 */
#include "text/unicode.h"
#include "base/err.h"

#include <stdlib.h>
#include <utf8proc.h>

_Static_assert(UTF8PROC_CATEGORY_CO == (int)NLP_UC_CO, "category numbering matches utf8proc");
_Static_assert(UTF8PROC_CATEGORY_ZS == (int)NLP_UC_ZS, "category numbering matches utf8proc");

nlp_uc_cat nlp_uc_category(int32_t cp)
{
    if (cp < 0 || cp > 0x10FFFF) return NLP_UC_CN;
    return (nlp_uc_cat)utf8proc_category(cp);
}

const char *nlp_uc_category_name(nlp_uc_cat c)
{
    static const char *names[] = {"Cn", "Lu", "Ll", "Lt", "Lm", "Lo", "Mn", "Mc", "Me", "Nd",
                                  "Nl", "No", "Pc", "Pd", "Ps", "Pe", "Pi", "Pf", "Po", "Sm",
                                  "Sc", "Sk", "So", "Zs", "Zl", "Zp", "Cc", "Cf", "Cs", "Co"};
    return (unsigned)c < sizeof names / sizeof *names ? names[c] : "Cn";
}

int nlp_uc_is_letter(int32_t cp) { return nlp_uc_cat_is_letter(nlp_uc_category(cp)); }
int nlp_uc_is_number(int32_t cp) { return nlp_uc_cat_is_number(nlp_uc_category(cp)); }
int nlp_uc_is_punct(int32_t cp) { return nlp_uc_cat_is_punct(nlp_uc_category(cp)); }

int nlp_uc_is_white_space(int32_t cp)
{
    if (cp < 0x80) return cp == 0x20 || (cp >= 0x09 && cp <= 0x0D);
    switch (cp) {
    case 0x85: case 0xA0: case 0x1680: case 0x2028: case 0x2029: case 0x202F: case 0x205F: case 0x3000:
        return 1;
    default:
        return cp >= 0x2000 && cp <= 0x200A;
    }
}

int nlp_uc_is_py_space(int32_t cp) { return nlp_uc_is_white_space(cp) || (cp >= 0x1C && cp <= 0x1F); }

int32_t nlp_uc_tolower(int32_t cp) { return cp < 0 || cp > 0x10FFFF ? cp : utf8proc_tolower(cp); }
int32_t nlp_uc_toupper(int32_t cp) { return cp < 0 || cp > 0x10FFFF ? cp : utf8proc_toupper(cp); }

int nlp_uc_normalize(const char *s, size_t n, nlp_norm_form form, nlp_buf *out)
{
    int opts = UTF8PROC_STABLE;
    switch (form) {
    case NLP_NORM_NFC: opts |= UTF8PROC_COMPOSE; break;
    case NLP_NORM_NFD: opts |= UTF8PROC_DECOMPOSE; break;
    case NLP_NORM_NFKC: opts |= UTF8PROC_COMPOSE | UTF8PROC_COMPAT; break;
    case NLP_NORM_NFKD: opts |= UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT; break;
    }
    utf8proc_uint8_t *res = NULL;
    utf8proc_ssize_t k = utf8proc_map((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, &res,
                                      (utf8proc_option_t)opts);
    if (k < 0) {
        if (k == UTF8PROC_ERROR_NOMEM) return nlp_error(NLP_ENOMEM, "out of memory (normalization)");
        return nlp_error(NLP_EDATA, "cannot normalize: %s", utf8proc_errmsg(k));
    }
    int rc = nlp_buf_append(out, res, (size_t)k);
    free(res);
    return rc;
}

long nlp_uc_nfd_cps(const char *s, size_t n, int32_t *buf, size_t cap)
{
    utf8proc_ssize_t k = utf8proc_decompose((const utf8proc_uint8_t *)s, (utf8proc_ssize_t)n, buf,
                                            (utf8proc_ssize_t)cap, UTF8PROC_DECOMPOSE);
    if (k < 0) return nlp_error(NLP_EDATA, "cannot normalize: %s", utf8proc_errmsg(k));
    return (long)k;
}

int nlp_uc_grapheme_break(int32_t *state, int32_t a, int32_t b)
{
    utf8proc_int32_t st = *state;
    int r = utf8proc_grapheme_break_stateful(a, b, &st);
    *state = st;
    return r;
}
