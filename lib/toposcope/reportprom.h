/* toposcope — the report as Prometheus metrics (`toposcope report --format prometheus`, the
 * epilog's node_exporter textfile).
 *
 * Text exposition format 0.0.4: every family's # HELP and # TYPE line before its samples, once;
 * names prefixed toposcope_, in base units (seconds), counters ending in _total; label values
 * escaped (backslash, double quote, newline). The families:
 *
 *   toposcope_records                          gauge    records read
 *   toposcope_records_skipped                  gauge    files in the directory that are not records
 *   toposcope_measurements_total{status}       counter  records by the prolog's status:
 *                                                       measured, partial, failed
 *   toposcope_prolog_duration_seconds          summary  the prolog's duration (quantiles 0.5, 0.9,
 *                                                       0.99, _sum, _count)
 *   toposcope_link_flags_total{link,kind}      counter  records that flagged the link
 *   toposcope_link_seen_total{link,kind}       counter  records that measured or flagged it
 *   toposcope_link_unreachable_total{link,kind} counter of those, as a node that did not answer
 *   toposcope_link_evidence{link,kind}         gauge    the report's evidence
 *   toposcope_link_excess_seconds{link,kind}   gauge    median excess over the baseline
 *   toposcope_link_last_flagged_timestamp_seconds{link,kind}  gauge
 *
 * A link's labels are link (its name, by topology.conf when the report has it), kind (uplink,
 * access) and, for a node set within a switch, within. Counters count the records in the
 * directory, so they only grow while records are added (removing records is a reset). */
#ifndef TOPOSCOPE_REPORTPROM_H
#define TOPOSCOPE_REPORTPROM_H

#include <stdio.h>
#include "toposcope/error.h"
#include "toposcope/report.h"

/* The first `top` suspects (-1: all) and the totals of r; skipped: the files not read. Same
 * report, same bytes. */
int ts_report_write_prometheus(ts_report *r, int top, int skipped, FILE *out, ts_error *err);

#endif
