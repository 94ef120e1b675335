/*
 * pystr.c — Python str.lower/split/strip on UTF-8. See pystr.h.
 */
#include "eval/pystr.h"
#include "base/err.h"
#include "text/unicode.h"
#include "text/utf8.h"

#include <string.h>
#include <utf8proc.h>

size_t nlp_py_space_len(const char *str, size_t n, size_t i)
{
    const unsigned char *s = (const unsigned char *)str;
    unsigned c = s[i];
    if (c < 0x80) return (c == ' ' || (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x1F)) ? 1 : 0;
    /* non-ASCII whitespace: U+0085 U+00A0 (C2 xx), U+1680 (E1 9A 80),
     * U+2000-200A U+2028 U+2029 U+202F U+205F (E2 80/81 xx), U+3000 (E3 80 80) */
    if (c == 0xC2) return i + 1 < n && (s[i + 1] == 0x85 || s[i + 1] == 0xA0) ? 2 : 0;
    if (i + 2 >= n) return 0;
    unsigned b1 = s[i + 1], b2 = s[i + 2];
    if (c == 0xE1) return b1 == 0x9A && b2 == 0x80 ? 3 : 0;
    if (c == 0xE2) {
        if (b1 == 0x80) return (b2 <= 0x8A || b2 == 0xA8 || b2 == 0xA9 || b2 == 0xAF) && b2 >= 0x80 ? 3 : 0;
        return b1 == 0x81 && b2 == 0x9F ? 3 : 0;
    }
    if (c == 0xE3) return b1 == 0x80 && b2 == 0x80 ? 3 : 0;
    return 0;
}

/* Is there a whitespace character ending exactly at byte n? */
static size_t space_before(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    if (n == 0) return 0;
    if (s[n - 1] < 0x80) return nlp_py_space_len(str, n, n - 1);
    if (n >= 2 && s[n - 2] == 0xC2) return nlp_py_space_len(str, n, n - 2);
    if (n >= 3 && s[n - 3] >= 0xE1 && s[n - 3] <= 0xE3) return nlp_py_space_len(str, n, n - 3);
    return 0;
}

size_t nlp_py_rstrip(const char *s, size_t n)
{
    size_t k;
    while ((k = space_before(s, n)) > 0) n -= k;
    return n;
}

size_t nlp_py_lstrip(const char *s, size_t n)
{
    size_t i = 0, k;
    while (i < n && (k = nlp_py_space_len(s, n, i)) > 0) i += k;
    return i;
}

/* byte classes: 1 = ASCII whitespace, 2 = may start non-ASCII whitespace */
static const unsigned char space_class[256] = {
    [0x09] = 1, [0x0A] = 1, [0x0B] = 1, [0x0C] = 1, [0x0D] = 1, [0x1C] = 1, [0x1D] = 1, [0x1E] = 1,
    [0x1F] = 1, [0x20] = 1, [0xC2] = 2, [0xE1] = 2, [0xE2] = 2, [0xE3] = 2,
};

int nlp_py_next_token(const char *str, size_t n, size_t *pos, size_t *tb, size_t *te)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = *pos, k;
    for (;;) {
        while (i < n && space_class[s[i]] == 1) i++;
        if (i < n && space_class[s[i]] == 2 && (k = nlp_py_space_len(str, n, i)) > 0) {
            i += k;
            continue;
        }
        break;
    }
    if (i >= n) {
        *pos = n;
        return 0;
    }
    size_t b = i;
    while (i < n) {
        unsigned c = space_class[s[i]];
        if (c == 1 || (c == 2 && nlp_py_space_len(str, n, i) > 0)) break;
        i++;
    }
    *tb = b;
    *te = i;
    *pos = i;
    return 1;
}

// --- lowercasing

typedef struct { int32_t lo, hi; } range;

/* Other_Lowercase and Other_Uppercase (PropList.txt, Unicode 15): the cased
 * characters outside the categories Lu, Ll, Lt. */
static const range other_cased[] = {
    {0x00AA, 0x00AA}, {0x00BA, 0x00BA}, {0x02B0, 0x02B8}, {0x02C0, 0x02C1}, {0x02E0, 0x02E4},
    {0x0345, 0x0345}, {0x037A, 0x037A}, {0x10FC, 0x10FC}, {0x1D2C, 0x1D6A}, {0x1D78, 0x1D78},
    {0x1D9B, 0x1DBF}, {0x2071, 0x2071}, {0x207F, 0x207F}, {0x2090, 0x209C}, {0x2160, 0x217F},
    {0x24B6, 0x24E9}, {0x2C7C, 0x2C7D}, {0xA69C, 0xA69D}, {0xA770, 0xA770}, {0xA7F2, 0xA7F4},
    {0xA7F8, 0xA7F9}, {0xAB5C, 0xAB5F}, {0xAB69, 0xAB69}, {0x10780, 0x10780}, {0x10783, 0x10785},
    {0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x1E030, 0x1E06D}, {0x1F130, 0x1F149},
    {0x1F150, 0x1F169}, {0x1F170, 0x1F189},
};

/* Word_Break MidLetter, MidNumLet and Single_Quote (WordBreakProperty.txt):
 * the case-ignorable characters outside Mn, Me, Cf, Lm, Sk. */
static const int32_t word_mid[] = {
    0x0027, 0x002E, 0x003A, 0x00B7, 0x0387, 0x055F, 0x05F4, 0x2018, 0x2019,
    0x2024, 0x2027, 0xFE13, 0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A,
};

int nlp_py_is_cased(int32_t cp)
{
    nlp_uc_cat c = nlp_uc_category(cp);
    if (c == NLP_UC_LU || c == NLP_UC_LL || c == NLP_UC_LT) return 1;
    for (size_t i = 0; i < sizeof other_cased / sizeof *other_cased; i++)
        if (cp >= other_cased[i].lo && cp <= other_cased[i].hi) return 1;
    return 0;
}

int nlp_py_is_case_ignorable(int32_t cp)
{
    nlp_uc_cat c = nlp_uc_category(cp);
    if (c == NLP_UC_MN || c == NLP_UC_ME || c == NLP_UC_CF || c == NLP_UC_LM || c == NLP_UC_SK) return 1;
    for (size_t i = 0; i < sizeof word_mid / sizeof *word_mid; i++)
        if (cp == word_mid[i]) return 1;
    return 0;
}

/* The code point that ends just before byte i of well-formed s (i > 0). */
static int32_t prev_cp(const char *s, size_t *i)
{
    size_t j = *i - 1;
    while (j > 0 && ((unsigned char)s[j] & 0xC0) == 0x80) j--;
    size_t k = j;
    int32_t cp = nlp_utf8_next(s, *i, &k);
    *i = j;
    return cp;
}

/* Final_Sigma: \p{cased} \p{case-ignorable}* Σ !(\p{case-ignorable}* \p{cased}),
 * with the sigma at bytes [b, e) of s. */
static int final_sigma(const char *s, size_t n, size_t b, size_t e)
{
    size_t i = b;
    int32_t c = 0;
    int found = 0;
    while (i > 0) {
        c = prev_cp(s, &i);
        if (!nlp_py_is_case_ignorable(c)) {
            found = 1;
            break;
        }
    }
    if (!found || !nlp_py_is_cased(c)) return 0;
    i = e;
    while (i < n) {
        c = nlp_utf8_next(s, n, &i);
        if (!nlp_py_is_case_ignorable(c)) return !nlp_py_is_cased(c);
    }
    return 1;
}

int nlp_py_lower(const char *s, size_t n, nlp_buf *out)
{
    if (nlp_buf_reserve(out, n + 8)) return NLP_ENOMEM;
    size_t i = 0;
    while (i < n) {
        /* copy an ASCII run at once */
        size_t j = i;
        while (j < n && (unsigned char)s[j] < 0x80) j++;
        if (j > i) {
            if (nlp_buf_reserve(out, j - i)) return NLP_ENOMEM;
            char *d = out->data + out->len;
            for (size_t k = i; k < j; k++) d[k - i] = (char)(s[k] >= 'A' && s[k] <= 'Z' ? s[k] + 32 : s[k]);
            out->len += j - i;
            out->data[out->len] = 0;
            i = j;
            if (i >= n) break;
        }
        size_t b = i;
        int32_t cp = nlp_utf8_next(s, n, &i);
        int32_t lo;
        if (cp == 0x0130) {
            if (nlp_buf_append(out, "i\xCC\x87", 3)) return NLP_ENOMEM;
            continue;
        }
        if (cp == 0x03A3) lo = final_sigma(s, n, b, i) ? 0x03C2 : 0x03C3;
        else lo = cp < 0 ? NLP_UTF8_REPLACEMENT : utf8proc_tolower(cp);
        if (nlp_utf8_append(out, lo)) return NLP_ENOMEM;
    }
    return NLP_OK;
}
