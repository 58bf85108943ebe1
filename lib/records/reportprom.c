/* toposcope — the report as Prometheus metrics (see toposcope/reportprom.h). */
#include <math.h>
#include <string.h>
#include "toposcope/reportprom.h"

static void family(FILE *out, const char *name, const char *type, const char *help)
{
    fprintf(out, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

/* A label value as the exposition format wants it. */
static void label_value(FILE *out, const char *s)
{
    fputc('"', out);
    for (; *s; s++) {
        if (*s == '\\' || *s == '"')
            fprintf(out, "\\%c", *s);
        else if (*s == '\n')
            fputs("\\n", out);
        else
            fputc(*s, out);
    }
    fputc('"', out);
}

/* ten digits: far below any measurement's error; NaN and infinities as Prometheus spells them. */
static void value(FILE *out, double v)
{
    if (isnan(v))
        fputs("NaN", out);
    else if (isinf(v))
        fputs(v > 0 ? "+Inf" : "-Inf", out);
    else
        fprintf(out, "%.10g", v);
}

static void link_sample(FILE *out, const char *name, const ts_suspect *s, double v)
{
    fprintf(out, "%s{link=", name);
    label_value(out, s->id);
    fprintf(out, ",kind=\"%s\"", s->access ? "access" : "uplink");
    if (s->within) {
        fputs(",within=", out);
        label_value(out, s->within);
    }
    fputc('}', out);
    fputc(' ', out);
    value(out, v);
    fputc('\n', out);
}

typedef enum { F_FLAGS, F_SEEN, F_UNREACHABLE, F_EVIDENCE, F_EXCESS, F_LAST } link_field;

static double field_of(const ts_suspect *s, link_field f)
{
    switch (f) {
    case F_FLAGS: return s->flagged;
    case F_SEEN: return s->seen;
    case F_UNREACHABLE: return s->unreachable;
    case F_EVIDENCE: return s->evidence;
    case F_EXCESS: return s->median_excess_us / 1e6;
    default: return (double)s->last_seen;
    }
}

static void links(FILE *out, const ts_suspect *s, int n)
{
    static const struct {
        const char *name, *type, *help;
        link_field f;
    } fam[] = {
        { "toposcope_link_flags_total", "counter", "Records that flagged the link.", F_FLAGS },
        { "toposcope_link_seen_total", "counter", "Records that measured or flagged the link.", F_SEEN },
        { "toposcope_link_unreachable_total", "counter", "Records that flagged the link as a node that did not answer.",
          F_UNREACHABLE },
        { "toposcope_link_evidence", "gauge", "Evidence against the link: each flagging record weighted by the "
          "share of its other links that were fine.", F_EVIDENCE },
        { "toposcope_link_excess_seconds", "gauge", "Median excess of the link's latency over its baseline, "
          "over the records that flagged it slow.", F_EXCESS },
        { "toposcope_link_last_flagged_timestamp_seconds", "gauge", "Time of the newest record that flagged "
          "the link, in seconds since the epoch.", F_LAST },
    };
    for (size_t k = 0; k < sizeof fam / sizeof fam[0]; k++) {
        family(out, fam[k].name, fam[k].type, fam[k].help);
        for (int i = 0; i < n; i++)
            if (fam[k].f != F_EXCESS || isfinite(s[i].median_excess_us))   /* silent only: no excess */
                link_sample(out, fam[k].name, &s[i], field_of(&s[i], fam[k].f));
    }
}

int ts_report_write_prometheus(ts_report *r, int top, int skipped, FILE *out, ts_error *err)
{
    const ts_suspect *s;
    int n, rc;
    ts_report_totals t;
    if ((rc = ts_report_suspects(r, &s, &n, err)) != TS_OK || (rc = ts_report_totals_get(r, &t, err)) != TS_OK)
        return rc;
    if (top >= 0 && top < n)
        n = top;
    family(out, "toposcope_records", "gauge", "Link records read.");
    fprintf(out, "toposcope_records %d\n", t.records);
    family(out, "toposcope_records_skipped", "gauge", "Files in the records directory that are not records.");
    fprintf(out, "toposcope_records_skipped %d\n", skipped);
    family(out, "toposcope_measurements_total", "counter",
           "Jobs recorded, by the prolog's measurement status (failed: fallback, or no status).");
    fprintf(out, "toposcope_measurements_total{status=\"measured\"} %d\n", t.measured);
    fprintf(out, "toposcope_measurements_total{status=\"partial\"} %d\n", t.partial);
    fprintf(out, "toposcope_measurements_total{status=\"failed\"} %d\n", t.failed);
    family(out, "toposcope_prolog_duration_seconds", "summary",
           "The prolog's measurement, from the leader's start to the results sent.");
    for (int q = 0; q < TS_REPORT_QUANTILES; q++) {
        fprintf(out, "toposcope_prolog_duration_seconds{quantile=\"%g\"} ", ts_report_quantiles[q]);
        value(out, t.prolog_q_s[q]);
        fputc('\n', out);
    }
    fputs("toposcope_prolog_duration_seconds_sum ", out);
    value(out, t.prolog_sum_s);
    fprintf(out, "\ntoposcope_prolog_duration_seconds_count %d\n", t.prolog_n);
    links(out, s, n);
    return ferror(out) ? ts_fail(err, TS_ESYS, "write error") : TS_OK;
}
