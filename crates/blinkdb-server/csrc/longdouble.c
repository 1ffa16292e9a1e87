/* INCRBYFLOAT arithmetic in C's long double (x87 80-bit on x86-64).
 * Redis computes INCRBYFLOAT with strtold, long double addition and
 * "%.17Lf"; Rust has no 80-bit float, so replies would differ in the last
 * digits (0.1 + 0.2 is "0.3" in Redis). This file exists only for that. */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

#define MAX_LD_CHARS (5 * 1024)

/* Parses like Redis's string2ld; returns 0 when not a valid float. */
static int parse_ld(const char *s, size_t len, long double *out) {
    char buf[MAX_LD_CHARS];
    char *end;
    long double v;
    if (len == 0 || len >= sizeof(buf)) return 0;
    memcpy(buf, s, len);
    buf[len] = '\0';
    errno = 0;
    v = strtold(buf, &end);
    if (isspace((unsigned char)buf[0]) || end[0] != '\0' || (size_t)(end - buf) != len ||
        (errno == ERANGE && (v == HUGE_VALL || v == -HUGE_VALL || fpclassify(v) == FP_ZERO)) ||
        errno == EINVAL || isnan(v))
        return 0;
    *out = v;
    return 1;
}

/* cur may be NULL (missing key counts as 0). Returns the length written to
 * out, or -1 (current value not a float), -2 (increment not a float),
 * -3 (result NaN or infinite). */
long blinkdb_incrbyfloat(const char *cur, size_t cur_len, const char *inc, size_t inc_len,
                         char *out, size_t out_len) {
    long double value = 0, incr;
    int l;
    if (cur && !parse_ld(cur, cur_len, &value)) return -1;
    if (!parse_ld(inc, inc_len, &incr)) return -2;
    value += incr;
    if (isnan(value) || isinf(value)) return -3;
    l = snprintf(out, out_len, "%.17Lf", value);
    if (l < 0 || (size_t)l + 1 > out_len) return -3;
    if (strchr(out, '.') != NULL) {
        char *p = out + l - 1;
        while (*p == '0') { p--; l--; }
        if (*p == '.') l--;
    }
    if (l == 2 && out[0] == '-' && out[1] == '0') { out[0] = '0'; l = 1; }
    out[l] = '\0';
    return l;
}
