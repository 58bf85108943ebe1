/* toposcope — Slurm hostlist expressions (expansion, compression, natural order). */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "toposcope/hostlist.h"

int ts_hostname_cmp(const char *a, const char *b)
{
    /* Compare runs of digits by value (then by width, so "01" < "1" is stable), text bytewise. */
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            const char *sa = a, *sb = b;
            while (*sa == '0' && isdigit((unsigned char)sa[1]))
                sa++;
            while (*sb == '0' && isdigit((unsigned char)sb[1]))
                sb++;
            const char *ea = sa, *eb = sb;
            while (isdigit((unsigned char)*ea))
                ea++;
            while (isdigit((unsigned char)*eb))
                eb++;
            if (ea - sa != eb - sb)
                return (ea - sa) < (eb - sb) ? -1 : 1;
            int c = strncmp(sa, sb, (size_t)(ea - sa));
            if (c)
                return c;
            if ((ea - a) != (eb - b))
                return (ea - a) < (eb - b) ? -1 : 1;
            a = ea;
            b = eb;
        } else {
            if (*a != *b)
                return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return (unsigned char)*a - (unsigned char)*b;
}
